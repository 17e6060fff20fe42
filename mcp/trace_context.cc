#include "mcp/trace_context.h"

namespace sandbox::mcp {

namespace {

constexpr size_t kVersion00Length = 55;  // 2 + 1 + 32 + 1 + 16 + 1 + 2
constexpr size_t kMaxLength = 256;

bool LowerHex(std::string_view text) {
  for (char c : text) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

bool AllZero(std::string_view text) {
  return text.find_first_not_of('0') == std::string_view::npos;
}

}  // namespace

bool IsValidTraceparent(std::string_view value) {
  if (value.size() < kVersion00Length || value.size() > kMaxLength) return false;
  std::string_view version = value.substr(0, 2);
  std::string_view trace_id = value.substr(3, 32);
  std::string_view parent_id = value.substr(36, 16);
  std::string_view flags = value.substr(53, 2);
  if (value[2] != '-' || value[35] != '-' || value[52] != '-') return false;
  if (!LowerHex(version) || !LowerHex(trace_id) || !LowerHex(parent_id) || !LowerHex(flags)) {
    return false;
  }
  if (version == "ff" || AllZero(trace_id) || AllZero(parent_id)) return false;
  if (version == "00") return value.size() == kVersion00Length;
  // A later version may add fields after a dash (the spec's forward compatibility); they are
  // kept, but must be printable ASCII without quotes, like the rest.
  if (value.size() == kVersion00Length) return true;
  if (value[kVersion00Length] != '-') return false;
  for (char c : value.substr(kVersion00Length)) {
    if (c < 0x21 || c > 0x7e || c == '"' || c == '\\') return false;
  }
  return true;
}

std::string TraceparentOf(const Json& params) {
  if (!params.is_object()) return "";
  auto meta = params.find("_meta");
  if (meta == params.end() || !meta->is_object()) return "";
  auto traceparent = meta->find("traceparent");
  if (traceparent == meta->end() || !traceparent->is_string()) return "";
  const auto& value = traceparent->get_ref<const std::string&>();
  return IsValidTraceparent(value) ? value : "";
}

}  // namespace sandbox::mcp
