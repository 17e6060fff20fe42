// Demultiplexes the stream of a non-TTY attach (or exec) connection: each frame is an 8-byte
// header [stream, 0, 0, 0, size as big-endian uint32] followed by `size` payload bytes. Stream 1
// is stdout, 2 stderr, 3 an error from the daemon itself (0, stdin, is written as stdout).
// Reads split frames anywhere, so the header is reassembled across Feed calls; payloads are
// handed on as they arrive, without waiting for the whole frame. Pure: no I/O.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <string_view>

#include "runtime/base/result.h"

namespace sandbox::docker {

enum class StreamType : uint8_t { kStdout = 1, kStderr = 2, kSystemError = 3 };

class StreamDemuxer {
 public:
  // Receives each payload piece with the stream it belongs to (never an empty piece).
  using Sink = std::function<void(StreamType stream, std::string_view payload)>;

  // Consumes `bytes`. Fails (and stays failed) on a header that is not a frame header, which
  // means the connection is not a multiplexed stream (e.g. a TTY container).
  Status Feed(std::string_view bytes, const Sink& sink);

  // True between frames: no partial header or payload is pending.
  bool at_frame_boundary() const { return header_filled_ == 0 && payload_left_ == 0; }

 private:
  std::array<uint8_t, 8> header_{};
  size_t header_filled_ = 0;
  uint32_t payload_left_ = 0;
  StreamType current_ = StreamType::kStdout;
  bool broken_ = false;
};

}  // namespace sandbox::docker
