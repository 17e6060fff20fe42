#include "runtime/base/quoted.h"

#include <fmt/format.h>

namespace sandbox {

std::string Quoted(std::string_view text, size_t max_bytes) {
  std::string_view kept = text;
  if (kept.size() > max_bytes) {
    size_t end = max_bytes;
    // Step back over continuation bytes so the cut falls before a lead byte.
    while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;
    kept = text.substr(0, end);
  }
  std::string out = "'";
  out.reserve(kept.size() + 24);
  for (char c : kept) {
    auto u = static_cast<unsigned char>(c);
    out += (u < 0x20 || u == 0x7F) ? '?' : c;
  }
  if (kept.size() < text.size()) {
    out += fmt::format("…' ({} bytes)", text.size());
  } else {
    out += '\'';
  }
  return out;
}

}  // namespace sandbox
