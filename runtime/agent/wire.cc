#include "runtime/agent/wire.h"

#include <algorithm>
#include <array>

#include "runtime/base/base64.h"
#include "runtime/base/json_parse.h"

namespace sandbox::agent {

namespace {

const Json* Field(const Json& message, const char* key) {
  if (!message.is_object()) return nullptr;
  auto it = message.find(key);
  return it == message.end() ? nullptr : &*it;
}

}  // namespace

std::string EncodeFrame(const Json& message) {
  // The body is serialized right after a placeholder header, not copied behind one: a frame
  // holding a file chunk exists once in memory, not twice.
  std::string frame(4, '\0');
  nlohmann::detail::serializer<Json> serializer(
      nlohmann::detail::output_adapter<char, std::string>(frame), ' ',
      Json::error_handler_t::replace);
  serializer.dump(message, /*pretty_print=*/false, /*ensure_ascii=*/false, /*indent_step=*/0);
  size_t body_size = frame.size() - 4;
  // A body above 4 GiB cannot be framed; the limit (kMaxFrameBytes) is far below, and the
  // reader refuses the frame by its (wrapped) length anyway.
  auto size = static_cast<uint32_t>(std::min<size_t>(body_size, UINT32_MAX));
  frame[0] = static_cast<char>((size >> 24) & 0xff);
  frame[1] = static_cast<char>((size >> 16) & 0xff);
  frame[2] = static_cast<char>((size >> 8) & 0xff);
  frame[3] = static_cast<char>(size & 0xff);
  return frame;
}

void FrameDecoder::Append(std::string_view bytes) {
  // Drop what was consumed before growing, so a long stream of small frames stays small.
  if (consumed_ > 0 && (consumed_ == buffer_.size() || consumed_ >= (size_t{1} << 16))) {
    buffer_.erase(0, consumed_);
    consumed_ = 0;
  }
  buffer_.append(bytes);
}

Result<std::optional<Json>> FrameDecoder::Next() {
  if (buffered() < 4) return std::optional<Json>();
  const auto* head = reinterpret_cast<const unsigned char*>(buffer_.data() + consumed_);
  size_t size =
      (size_t{head[0]} << 24) | (size_t{head[1]} << 16) | (size_t{head[2]} << 8) | head[3];
  if (size > max_frame_bytes_) {
    return Fail(ErrorCode::kInvalidArgument, "frame of {} bytes exceeds the limit of {}", size,
                max_frame_bytes_);
  }
  if (buffered() < 4 + size) return std::optional<Json>();
  const char* body = buffer_.data() + consumed_ + 4;
  // Either side may be hostile (cell code can write init's frames' worth of JSON through the
  // worker; a host is trusted but the codec is shared): depth is bounded before parsing.
  auto message = ParseJsonBounded(std::string_view(body, size));
  consumed_ += 4 + size;
  if (!message) {
    return Fail(std::move(message.error()).Context(fmt::format("frame of {} bytes", size)));
  }
  if (!message->is_object()) {
    return Fail(ErrorCode::kInvalidArgument, "frame of {} bytes is not a JSON object", size);
  }
  return std::optional<Json>(std::move(*message));
}

std::string GetString(const Json& message, const char* key, std::string_view fallback) {
  const Json* field = Field(message, key);
  if (field == nullptr || !field->is_string()) return std::string(fallback);
  return field->get_ref<const std::string&>();
}

int64_t GetInt(const Json& message, const char* key, int64_t fallback) {
  const Json* field = Field(message, key);
  if (field == nullptr) return fallback;
  if (field->is_number_integer()) return field->get<int64_t>();
  return fallback;
}

uint64_t GetUint(const Json& message, const char* key, uint64_t fallback) {
  const Json* field = Field(message, key);
  if (field == nullptr) return fallback;
  if (field->is_number_unsigned()) return field->get<uint64_t>();
  if (field->is_number_integer() && field->get<int64_t>() >= 0) {
    return static_cast<uint64_t>(field->get<int64_t>());
  }
  return fallback;
}

double GetDouble(const Json& message, const char* key, double fallback) {
  const Json* field = Field(message, key);
  if (field == nullptr || !field->is_number()) return fallback;
  return field->get<double>();
}

bool GetBool(const Json& message, const char* key, bool fallback) {
  const Json* field = Field(message, key);
  if (field == nullptr || !field->is_boolean()) return fallback;
  return field->get<bool>();
}

Result<std::string> GetBytes(const Json& message, const char* key) {
  const Json* field = Field(message, key);
  if (field == nullptr) return std::string();
  if (!field->is_string())
    return Fail(ErrorCode::kInvalidArgument, "field {} is not a string", key);
  auto decoded = Base64Decode(field->get_ref<const std::string&>());
  if (!decoded) return Fail(ErrorCode::kInvalidArgument, "field {} is not valid base64", key);
  return std::move(*decoded);
}

ErrorCode ErrorCodeFromName(std::string_view name) {
  for (int i = 0; i <= static_cast<int>(ErrorCode::kInstallFailed); ++i) {
    auto code = static_cast<ErrorCode>(i);
    if (ErrorCodeName(code) == name) return code;
  }
  return ErrorCode::kInternal;
}

}  // namespace sandbox::agent
