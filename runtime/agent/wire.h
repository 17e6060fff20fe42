// The agent protocol's wire format (runtime/agent/PROTOCOL.md), shared by the host-side
// AgentClient and the in-sandbox init: frames of a 4-byte big-endian length followed by one JSON
// object. A message may carry raw bytes (file content): its JSON says `"bytes": N` and a binary
// frame of exactly N bytes follows it (bit 31 of the length word set). Other bytes that may not
// be UTF-8 (run output, PNGs) travel base64-encoded inside the JSON.
// Nothing here throws: malformed input from either side comes back as an Error.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/base/result.h"

namespace sandbox::agent {

using Json = nlohmann::json;

// 2: file content in binary frames (1: base64 in JSON). init and the server ship together; the
// hello's version still catches an agent dir of another build (SANDBOX_AGENT_DIR) up front.
inline constexpr int kProtocolVersion = 2;
// A bigger frame is a protocol error, never an allocation. File content never needs this much
// (it moves in chunks of kFileChunkBytes); what does is a run: its request carries the code
// (SANDBOX_MAX_CODE_BYTES, JSON-escaped) and its result both captured streams in base64 (init
// caps each at 32 MiB). Senders refuse to build a frame above it rather than break the stream.
inline constexpr size_t kMaxFrameBytes = size_t{96} << 20;
// File content per read_file answer and per write_chunk request (raw bytes, a binary frame).
inline constexpr size_t kFileChunkBytes = size_t{8} << 20;
// Bit 31 of a frame's length word marks a binary frame (a length never comes near it).
inline constexpr uint32_t kBinaryFrameFlag = uint32_t{1} << 31;
// The field of a message that announces a binary frame after it, and its size.
inline constexpr const char* kPayloadField = "bytes";

// One message: a JSON object, and the raw bytes of the binary frame that followed it when it
// announced one (empty otherwise).
struct Message {
  Json json;
  std::string payload;
};

// Serializes one message as a frame. Strings that are not valid UTF-8 are repaired (U+FFFD), so
// bytes must go as a payload or base64-encoded by the caller.
std::string EncodeFrame(const Json& message);
// The message with `"bytes": payload.size()` added, then the payload as a binary frame.
std::string EncodeFrame(Json message, std::string_view payload);
// Whether EncodeFrame's output holds a frame the reader refuses (above kMaxFrameBytes), so a
// sender can refuse to send it instead of breaking the stream.
bool ExceedsFrameLimit(std::string_view encoded);

// Reassembles messages from a byte stream that may split or merge frames arbitrarily.
class FrameDecoder {
 public:
  explicit FrameDecoder(size_t max_frame_bytes = kMaxFrameBytes)
      : max_frame_bytes_(max_frame_bytes) {}

  void Append(std::string_view bytes);
  // The next complete message (with its payload, once the binary frame it announced is in), or
  // nullopt when more bytes are needed. Fails (kInvalidArgument) on an oversized frame, one that
  // is not a JSON object, a bad `bytes` field, a binary frame nothing announced or of another
  // size than announced, or a JSON frame where a binary one was due; the stream is unusable
  // after that.
  Result<std::optional<Message>> Next();
  // Bytes received but not yet returned as messages.
  size_t buffered() const { return buffer_.size() - consumed_; }

 private:
  size_t max_frame_bytes_;
  std::string buffer_;
  size_t consumed_ = 0;
  // A message whose `bytes` announced a binary frame that has not come yet.
  std::optional<Message> pending_;
  size_t pending_bytes_ = 0;
};

// Typed reads of a message's fields that never throw: a missing field or one of another type
// gives the fallback.
std::string GetString(const Json& message, const char* key, std::string_view fallback = {});
int64_t GetInt(const Json& message, const char* key, int64_t fallback = 0);
uint64_t GetUint(const Json& message, const char* key, uint64_t fallback = 0);
double GetDouble(const Json& message, const char* key, double fallback = 0);
bool GetBool(const Json& message, const char* key, bool fallback = false);
// The strings of the array field `key`; entries of another type are skipped.
std::vector<std::string> GetStrings(const Json& message, const char* key);
// The base64 field `key`, decoded; an absent field is empty.
Result<std::string> GetBytes(const Json& message, const char* key);

// The code for a DESIGN.md error name ("not_found"); kInternal for names it does not know.
ErrorCode ErrorCodeFromName(std::string_view name);

}  // namespace sandbox::agent
