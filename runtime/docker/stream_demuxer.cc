#include "runtime/docker/stream_demuxer.h"

#include <algorithm>

namespace sandbox::docker {

Status StreamDemuxer::Feed(std::string_view bytes, const Sink& sink) {
  if (broken_) return Fail(ErrorCode::kSandboxUnavailable, "multiplexed stream is corrupt");
  while (!bytes.empty()) {
    if (payload_left_ == 0) {
      size_t take = std::min(header_.size() - header_filled_, bytes.size());
      std::copy_n(bytes.data(), take, header_.data() + header_filled_);
      header_filled_ += take;
      bytes.remove_prefix(take);
      if (header_filled_ < header_.size()) return {};
      header_filled_ = 0;
      if (header_[0] > 3 || header_[1] != 0 || header_[2] != 0 || header_[3] != 0) {
        broken_ = true;
        return Fail(ErrorCode::kSandboxUnavailable,
                    "multiplexed stream is corrupt: bad frame header {:02x} {:02x} {:02x} {:02x}",
                    header_[0], header_[1], header_[2], header_[3]);
      }
      current_ = header_[0] == 0 ? StreamType::kStdout : static_cast<StreamType>(header_[0]);
      payload_left_ = static_cast<uint32_t>(header_[4]) << 24 |
                      static_cast<uint32_t>(header_[5]) << 16 |
                      static_cast<uint32_t>(header_[6]) << 8 | static_cast<uint32_t>(header_[7]);
      continue;  // a zero-size frame is legal and carries nothing
    }
    size_t take = std::min<size_t>(payload_left_, bytes.size());
    sink(current_, bytes.substr(0, take));
    payload_left_ -= static_cast<uint32_t>(take);
    bytes.remove_prefix(take);
  }
  return {};
}

}  // namespace sandbox::docker
