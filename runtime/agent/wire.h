// The agent protocol's wire format (runtime/agent/PROTOCOL.md), shared by the host-side
// AgentClient and the in-sandbox init: frames of a 4-byte big-endian length followed by one JSON
// object. Bytes that may not be UTF-8 (output, file content) travel base64-encoded.
// Nothing here throws: malformed input from either side comes back as an Error.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "runtime/base/result.h"

namespace sandbox::agent {

using Json = nlohmann::json;

inline constexpr int kProtocolVersion = 1;
// A bigger frame is a protocol error, never an allocation. File content never needs this much
// (it moves in chunks of kFileChunkBytes); what does is a run: its request carries the code
// (SANDBOX_MAX_CODE_BYTES, JSON-escaped) and its result both captured streams in base64 (init
// caps each at 32 MiB). Senders refuse to build a frame above it rather than break the stream.
inline constexpr size_t kMaxFrameBytes = size_t{96} << 20;
// File content per read_file answer and per write_chunk request (before base64).
inline constexpr size_t kFileChunkBytes = size_t{4} << 20;

// Serializes one message as a frame. Strings that are not valid UTF-8 are repaired (U+FFFD), so
// byte payloads must be base64-encoded by the caller.
std::string EncodeFrame(const Json& message);

// Reassembles frames from a byte stream that may split or merge them arbitrarily.
class FrameDecoder {
 public:
  explicit FrameDecoder(size_t max_frame_bytes = kMaxFrameBytes)
      : max_frame_bytes_(max_frame_bytes) {}

  void Append(std::string_view bytes);
  // The next complete message, or nullopt when more bytes are needed. Fails (kInvalidArgument) on
  // an oversized frame or one that is not a JSON object; the stream is unusable after that.
  Result<std::optional<Json>> Next();
  // Bytes received but not yet returned as messages.
  size_t buffered() const { return buffer_.size() - consumed_; }

 private:
  size_t max_frame_bytes_;
  std::string buffer_;
  size_t consumed_ = 0;
};

// Typed reads of a message's fields that never throw: a missing field or one of another type
// gives the fallback.
std::string GetString(const Json& message, const char* key, std::string_view fallback = {});
int64_t GetInt(const Json& message, const char* key, int64_t fallback = 0);
uint64_t GetUint(const Json& message, const char* key, uint64_t fallback = 0);
double GetDouble(const Json& message, const char* key, double fallback = 0);
bool GetBool(const Json& message, const char* key, bool fallback = false);
// The base64 field `key`, decoded; an absent field is empty.
Result<std::string> GetBytes(const Json& message, const char* key);

// The code for a DESIGN.md error name ("not_found"); kInternal for names it does not know.
ErrorCode ErrorCodeFromName(std::string_view name);

}  // namespace sandbox::agent
