#include "runtime/agent/wire.h"

#include <algorithm>
#include <array>

#include "runtime/base/json_parse.h"

namespace sandbox::agent {

namespace {

constexpr char kBase64Alphabet[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

// Maps a byte to its 6-bit value, or -1 when it is not in the alphabet ('=' is handled apart).
constexpr std::array<int8_t, 256> MakeBase64Table() {
  std::array<int8_t, 256> table{};
  for (auto& entry : table) entry = -1;
  for (int i = 0; i < 64; ++i)
    table[static_cast<unsigned char>(kBase64Alphabet[i])] = static_cast<int8_t>(i);
  return table;
}
constexpr std::array<int8_t, 256> kBase64Table = MakeBase64Table();

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

std::string Base64Encode(std::string_view bytes) {
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 3 <= bytes.size(); i += 3) {
    uint32_t v = (uint32_t{static_cast<unsigned char>(bytes[i])} << 16) |
                 (uint32_t{static_cast<unsigned char>(bytes[i + 1])} << 8) |
                 static_cast<unsigned char>(bytes[i + 2]);
    out.push_back(kBase64Alphabet[(v >> 18) & 63]);
    out.push_back(kBase64Alphabet[(v >> 12) & 63]);
    out.push_back(kBase64Alphabet[(v >> 6) & 63]);
    out.push_back(kBase64Alphabet[v & 63]);
  }
  size_t rest = bytes.size() - i;
  if (rest > 0) {
    uint32_t v = uint32_t{static_cast<unsigned char>(bytes[i])} << 16;
    if (rest == 2) v |= uint32_t{static_cast<unsigned char>(bytes[i + 1])} << 8;
    out.push_back(kBase64Alphabet[(v >> 18) & 63]);
    out.push_back(kBase64Alphabet[(v >> 12) & 63]);
    out.push_back(rest == 2 ? kBase64Alphabet[(v >> 6) & 63] : '=');
    out.push_back('=');
  }
  return out;
}

Result<std::string> Base64Decode(std::string_view text) {
  if (text.size() % 4 != 0) {
    return Fail(ErrorCode::kInvalidArgument, "base64 text of {} characters is not a multiple of 4",
                text.size());
  }
  size_t padding = 0;
  if (!text.empty() && text.back() == '=') padding = (text[text.size() - 2] == '=') ? 2 : 1;
  std::string out;
  out.reserve(text.size() / 4 * 3);
  for (size_t i = 0; i < text.size(); i += 4) {
    bool last = i + 4 == text.size();
    uint32_t v = 0;
    for (size_t k = 0; k < 4; ++k) {
      char c = text[i + k];
      int8_t d = 0;
      if (c == '=' && last && k >= 4 - padding) {
        d = 0;
      } else {
        d = kBase64Table[static_cast<unsigned char>(c)];
        if (d < 0) return Fail(ErrorCode::kInvalidArgument, "invalid base64 at offset {}", i + k);
      }
      v = (v << 6) | static_cast<uint32_t>(d);
    }
    out.push_back(static_cast<char>((v >> 16) & 0xff));
    if (!last || padding < 2) out.push_back(static_cast<char>((v >> 8) & 0xff));
    if (!last || padding < 1) out.push_back(static_cast<char>(v & 0xff));
  }
  return out;
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
  if (!decoded) return Fail(std::move(decoded.error()).Context(key));
  return decoded;
}

ErrorCode ErrorCodeFromName(std::string_view name) {
  for (int i = 0; i <= static_cast<int>(ErrorCode::kInstallFailed); ++i) {
    auto code = static_cast<ErrorCode>(i);
    if (ErrorCodeName(code) == name) return code;
  }
  return ErrorCode::kInternal;
}

}  // namespace sandbox::agent
