#include "runtime/docker/attach_stream.h"

#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstring>

#include <spdlog/spdlog.h>

namespace sandbox::docker {
namespace {

constexpr size_t kMaxLogLine = 8192;

}  // namespace

AttachStream::AttachStream(HijackedConnection connection, std::string log_name)
    : fd_(std::move(connection.fd)), log_name_(std::move(log_name)) {
  if (auto consumed = Consume(connection.early_bytes); !consumed) {
    daemon_error_ = consumed.error().message;
  }
}

AttachStream::~AttachStream() {
  if (!log_line_.empty()) spdlog::debug("[{} agent] {}", log_name_, log_line_);
}

void AttachStream::RelayLog(std::string_view chunk) {
  while (!chunk.empty()) {
    size_t newline = chunk.find('\n');
    log_line_.append(chunk.substr(0, newline));
    if (newline == std::string_view::npos) {
      if (log_line_.size() < kMaxLogLine) return;
    } else {
      chunk.remove_prefix(newline + 1);
    }
    spdlog::debug("[{} agent] {}", log_name_, log_line_);
    log_line_.clear();
    if (newline == std::string_view::npos) return;
  }
}

Status AttachStream::Consume(std::string_view bytes) {
  return demuxer_.Feed(bytes, [this](StreamType stream, std::string_view payload) {
    switch (stream) {
      case StreamType::kStdout:
        protocol_.append(payload);
        break;
      case StreamType::kStderr:
        RelayLog(payload);
        break;
      case StreamType::kSystemError:
        daemon_error_.append(payload);
        break;
    }
  });
}

Result<size_t> AttachStream::Read(char* buf, size_t len, Clock::time_point deadline) {
  for (;;) {
    if (protocol_offset_ < protocol_.size()) {
      size_t n = std::min(len, protocol_.size() - protocol_offset_);
      std::memcpy(buf, protocol_.data() + protocol_offset_, n);
      protocol_offset_ += n;
      if (protocol_offset_ == protocol_.size()) {
        protocol_.clear();
        protocol_offset_ = 0;
      }
      return n;
    }
    // A daemon error ends the stream once the protocol bytes before it are read.
    if (!daemon_error_.empty() && (eof_ || demuxer_.at_frame_boundary())) {
      return Fail(ErrorCode::kSandboxUnavailable, "Docker daemon error on the attach stream: {}",
                  daemon_error_);
    }
    if (eof_) return 0;

    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) {
      return Fail(ErrorCode::kTimeout, "no output from the sandbox agent before the deadline");
    }
    pollfd pfd{fd_.get(), POLLIN, 0};
    int ready = ::poll(&pfd, 1, static_cast<int>(std::min<int64_t>(left.count() + 1, 60'000)));
    if (ready < 0) {
      if (errno == EINTR) continue;
      return FailSys("poll", "attach stream");
    }
    if (ready == 0) continue;  // re-check the deadline
    char chunk[16384];
    ssize_t n = ::recv(fd_.get(), chunk, sizeof chunk, MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      Error error = SysError("recv", "attach stream");
      error.code = ErrorCode::kSandboxUnavailable;
      return Fail(std::move(error));
    }
    if (n == 0) {
      eof_ = true;
      continue;
    }
    if (auto consumed = Consume(std::string_view(chunk, static_cast<size_t>(n))); !consumed) {
      eof_ = true;
      daemon_error_ = consumed.error().message;
    }
  }
}

Status AttachStream::Write(std::string_view data) {
  std::lock_guard<std::mutex> lock(write_mutex_);
  while (!data.empty()) {
    ssize_t n = ::send(fd_.get(), data.data(), data.size(), MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      Error error = SysError("send", "attach stream");
      error.code = ErrorCode::kSandboxUnavailable;
      return Fail(std::move(error));
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
  return {};
}

void AttachStream::CloseWrite() {
  std::lock_guard<std::mutex> lock(write_mutex_);
  ::shutdown(fd_.get(), SHUT_WR);
}

}  // namespace sandbox::docker
