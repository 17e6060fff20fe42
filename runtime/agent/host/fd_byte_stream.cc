#include "runtime/agent/host/fd_byte_stream.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ctime>

namespace sandbox {

namespace {

void SetNonBlocking(int fd) {
  int flags = ::fcntl(fd, F_GETFL);
  if (flags >= 0) ::fcntl(fd, F_SETFL, flags | O_NONBLOCK);
}

bool IsSocket(int fd) {
  struct stat st {};
  return ::fstat(fd, &st) == 0 && S_ISSOCK(st.st_mode);
}

// Waits for `events` on `fd` until `deadline`. Returns false when the deadline passed first.
Result<bool> WaitFor(int fd, short events, Clock::time_point deadline) {
  for (;;) {
    auto left = deadline - Clock::now();
    if (left <= Clock::duration::zero()) return false;
    auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(left).count();
    struct timespec timeout {};
    timeout.tv_sec = static_cast<time_t>(ns / 1000000000);
    timeout.tv_nsec = static_cast<long>(ns % 1000000000);
    struct pollfd p {
      fd, events, 0
    };
    int ready = ::ppoll(&p, 1, &timeout, nullptr);
    if (ready > 0) return true;
    if (ready < 0 && errno != EINTR) return FailSys("ppoll");
  }
}

// write(2) to a pipe whose reader is gone raises SIGPIPE, which would end the whole server.
// Block it for this thread during the write and consume the one the write raised, if any
// (the usual recipe; a socket uses MSG_NOSIGNAL instead).
ssize_t WriteWithoutSigpipe(int fd, const char* data, size_t len) {
  sigset_t pipe_set, old_set, pending;
  sigemptyset(&pipe_set);
  sigaddset(&pipe_set, SIGPIPE);
  sigpending(&pending);
  bool was_pending = sigismember(&pending, SIGPIPE) == 1;
  pthread_sigmask(SIG_BLOCK, &pipe_set, &old_set);
  ssize_t n = ::write(fd, data, len);
  int saved_errno = errno;
  if (n < 0 && errno == EPIPE && !was_pending) {
    struct timespec zero {};
    while (sigtimedwait(&pipe_set, nullptr, &zero) < 0 && errno == EINTR) {
    }
  }
  pthread_sigmask(SIG_SETMASK, &old_set, nullptr);
  errno = saved_errno;
  return n;
}

}  // namespace

FdByteStream::FdByteStream(Fd socket) : read_fd_(std::move(socket)), is_socket_(true) {
  SetNonBlocking(read_fd_.get());
}

FdByteStream::FdByteStream(Fd read_fd, Fd write_fd)
    : read_fd_(std::move(read_fd)), write_fd_(std::move(write_fd)) {
  SetNonBlocking(read_fd_.get());
  SetNonBlocking(write_fd_.get());
  is_socket_ = IsSocket(write_fd_.get());
}

Result<size_t> FdByteStream::Read(char* buf, size_t len, Clock::time_point deadline) {
  for (;;) {
    ssize_t n = ::read(read_fd_.get(), buf, len);
    if (n >= 0) return static_cast<size_t>(n);
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) return FailSys("read", "agent stream");
    SBX_ASSIGN_OR_RETURN(bool ready, WaitFor(read_fd_.get(), POLLIN, deadline));
    if (!ready) return Fail(ErrorCode::kTimeout, "no data from the agent before the deadline");
  }
}

Status FdByteStream::Write(std::string_view data) {
  std::lock_guard<std::mutex> lock(write_mutex_);
  if (write_closed_) return Fail(ErrorCode::kSandboxUnavailable, "agent stream closed for writing");
  int fd = write_fd_ ? write_fd_.get() : read_fd_.get();
  while (!data.empty()) {
    // MSG_NOSIGNAL: a dead agent is an EPIPE error here, not a SIGPIPE for the whole server.
    ssize_t n = is_socket_ ? ::send(fd, data.data(), data.size(), MSG_NOSIGNAL)
                           : WriteWithoutSigpipe(fd, data.data(), data.size());
    if (n > 0) {
      data.remove_prefix(static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      SBX_ASSIGN_OR_RETURN(bool ready, WaitFor(fd, POLLOUT, Clock::now() + kWriteStallTimeout));
      if (!ready)
        return Fail(ErrorCode::kSandboxUnavailable, "the agent stopped reading its input");
      continue;
    }
    Error error = SysError("write", "agent stream");
    error.code = ErrorCode::kSandboxUnavailable;
    return tl::unexpected(std::move(error));
  }
  return {};
}

void FdByteStream::CloseWrite() {
  std::lock_guard<std::mutex> lock(write_mutex_);
  if (write_closed_) return;
  write_closed_ = true;
  if (write_fd_) {
    write_fd_.Reset();
  } else {
    ::shutdown(read_fd_.get(), SHUT_WR);
  }
}

}  // namespace sandbox
