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

void PutLengthWord(char* at, uint32_t word) {
  at[0] = static_cast<char>((word >> 24) & 0xff);
  at[1] = static_cast<char>((word >> 16) & 0xff);
  at[2] = static_cast<char>((word >> 8) & 0xff);
  at[3] = static_cast<char>(word & 0xff);
}

uint32_t LengthWord(const char* at) {
  const auto* head = reinterpret_cast<const unsigned char*>(at);
  return (uint32_t{head[0]} << 24) | (uint32_t{head[1]} << 16) | (uint32_t{head[2]} << 8) |
         uint32_t{head[3]};
}

// A length as a length word: above the flag bit it cannot be framed; the limit (kMaxFrameBytes)
// is far below, and the reader refuses the frame by its (clamped) length anyway.
uint32_t ClampedLength(size_t size) {
  return static_cast<uint32_t>(std::min<size_t>(size, kBinaryFrameFlag - 1));
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
  PutLengthWord(frame.data(), ClampedLength(frame.size() - 4));
  return frame;
}

std::string EncodeFrame(Json message, std::string_view payload) {
  message[kPayloadField] = payload.size();
  std::string frame = EncodeFrame(message);
  size_t at = frame.size();
  // One allocation for both frames: the payload is copied once, into its place.
  frame.resize(at + 4 + payload.size());
  PutLengthWord(frame.data() + at, kBinaryFrameFlag | ClampedLength(payload.size()));
  std::copy(payload.begin(), payload.end(), frame.begin() + static_cast<ptrdiff_t>(at + 4));
  return frame;
}

bool ExceedsFrameLimit(std::string_view encoded) {
  while (encoded.size() >= 4) {
    size_t size = LengthWord(encoded.data()) & ~kBinaryFrameFlag;
    if (size > kMaxFrameBytes) return true;
    encoded.remove_prefix(std::min(encoded.size(), 4 + size));
  }
  return false;
}

void FrameDecoder::Append(std::string_view bytes) {
  // Drop what was consumed before growing, so a long stream of small frames stays small.
  if (consumed_ > 0 && (consumed_ == buffer_.size() || consumed_ >= (size_t{1} << 16))) {
    buffer_.erase(0, consumed_);
    consumed_ = 0;
  }
  buffer_.append(bytes);
}

Result<std::optional<Message>> FrameDecoder::Next() {
  for (;;) {
    if (buffered() < 4) return std::optional<Message>();
    uint32_t word = LengthWord(buffer_.data() + consumed_);
    bool binary = (word & kBinaryFrameFlag) != 0;
    size_t size = word & ~kBinaryFrameFlag;
    if (size > max_frame_bytes_) {
      return Fail(ErrorCode::kInvalidArgument, "{} frame of {} bytes exceeds the limit of {}",
                  binary ? "binary" : "JSON", size, max_frame_bytes_);
    }
    // Judged from the length word alone, before waiting for the body.
    if (binary && !pending_) {
      return Fail(ErrorCode::kInvalidArgument,
                  "binary frame of {} bytes without a message announcing it", size);
    }
    if (binary && size != pending_bytes_) {
      return Fail(ErrorCode::kInvalidArgument,
                  "binary frame of {} bytes where the message announced {}", size, pending_bytes_);
    }
    if (!binary && pending_) {
      return Fail(ErrorCode::kInvalidArgument,
                  "JSON frame where a binary frame of {} bytes was announced", pending_bytes_);
    }
    if (buffered() < 4 + size) return std::optional<Message>();
    const char* body = buffer_.data() + consumed_ + 4;
    consumed_ += 4 + size;
    if (binary) {
      std::optional<Message> message = std::move(pending_);
      pending_.reset();
      message->payload.assign(body, size);
      return message;
    }
    // Either side may be hostile (cell code can write init's frames' worth of JSON through the
    // worker; a host is trusted but the codec is shared): depth is bounded before parsing.
    auto json = ParseJsonBounded(std::string_view(body, size));
    if (!json) {
      return Fail(std::move(json.error()).Context(fmt::format("frame of {} bytes", size)));
    }
    if (!json->is_object()) {
      return Fail(ErrorCode::kInvalidArgument, "frame of {} bytes is not a JSON object", size);
    }
    auto announced = json->find(kPayloadField);
    if (announced == json->end()) return std::optional<Message>(Message{std::move(*json), {}});
    if (!announced->is_number_unsigned() || announced->get<uint64_t>() > max_frame_bytes_) {
      return Fail(ErrorCode::kInvalidArgument,
                  "frame of {} bytes announces a binary frame of a bad size", size);
    }
    pending_bytes_ = static_cast<size_t>(announced->get<uint64_t>());
    pending_.emplace(Message{std::move(*json), {}});
    // The binary frame may be in the buffer already.
  }
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

std::vector<std::string> GetStrings(const Json& message, const char* key) {
  std::vector<std::string> out;
  const Json* field = Field(message, key);
  if (field == nullptr || !field->is_array()) return out;
  for (const auto& item : *field) {
    if (item.is_string()) out.push_back(item.get<std::string>());
  }
  return out;
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
