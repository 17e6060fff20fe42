// The agent's ByteStream over a hijacked attach connection to a non-TTY container: writes go
// to the container's stdin as is; reads are demultiplexed (stream 1 = the agent's protocol
// output, 2 = the agent's log, relayed to spdlog at debug level line by line, 3 = an error from
// the daemon, surfaced as a read error).
#pragma once

#include <mutex>
#include <string>

#include "runtime/base/fd.h"
#include "runtime/byte_stream.h"
#include "runtime/docker/hijacked_connection.h"
#include "runtime/docker/stream_demuxer.h"

namespace sandbox::docker {

class AttachStream : public ByteStream {
 public:
  // `log_name` prefixes the relayed agent log lines (the session id).
  AttachStream(HijackedConnection connection, std::string log_name);
  ~AttachStream() override;

  Result<size_t> Read(char* buf, size_t len, Clock::time_point deadline) override;
  Status Write(std::string_view data) override;
  void CloseWrite() override;

 private:
  // Demultiplexes `bytes` into protocol_ / the log / daemon_error_.
  Status Consume(std::string_view bytes);
  void RelayLog(std::string_view chunk);

  Fd fd_;
  std::string log_name_;
  StreamDemuxer demuxer_;
  std::string protocol_;  // demultiplexed stream-1 bytes not yet read
  size_t protocol_offset_ = 0;
  std::string log_line_;      // an unfinished stream-2 line
  std::string daemon_error_;  // stream-3 text
  bool eof_ = false;
  std::mutex write_mutex_;
};

}  // namespace sandbox::docker
