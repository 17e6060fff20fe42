// FdByteStream: a ByteStream over a connected socket (one fd both ways, e.g. one end of a
// socketpair) or a pair of pipes. Reads wait with ppoll() until their deadline; writes are
// serialized and never raise SIGPIPE. The fds are made non-blocking (they are ours alone).
#pragma once

#include <mutex>

#include "runtime/base/fd.h"
#include "runtime/byte_stream.h"

namespace sandbox {

class FdByteStream : public ByteStream {
 public:
  // A socket used for both directions; CloseWrite() shuts down its write side.
  explicit FdByteStream(Fd socket);
  // Separate fds: `read_fd` from the agent, `write_fd` to it; CloseWrite() closes `write_fd`.
  FdByteStream(Fd read_fd, Fd write_fd);

  Result<size_t> Read(char* buf, size_t len, Clock::time_point deadline) override;
  // Fails with kSandboxUnavailable when the agent has not taken any bytes for kWriteStallTimeout.
  Status Write(std::string_view data) override;
  void CloseWrite() override;

  static constexpr std::chrono::seconds kWriteStallTimeout{60};

 private:
  Fd read_fd_;
  Fd write_fd_;  // invalid when read_fd_ is a socket used both ways
  bool is_socket_ = false;
  std::mutex write_mutex_;
  bool write_closed_ = false;  // guarded by write_mutex_
};

}  // namespace sandbox
