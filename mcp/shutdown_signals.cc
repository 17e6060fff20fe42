#include "mcp/shutdown_signals.h"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>

namespace sandbox::mcp {

namespace {

// The write end the handler pokes; write(2) is async-signal-safe.
std::atomic<int> g_signal_pipe{-1};

void OnSignal(int signo) {
  int fd = g_signal_pipe.load();
  if (fd >= 0) {
    unsigned char byte = static_cast<unsigned char>(signo);
    ssize_t ignored = write(fd, &byte, 1);
    (void)ignored;
  }
}

}  // namespace

Status ShutdownSignals::Install() {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0) return FailSys("pipe2");
  read_end_.Reset(fds[0]);
  write_end_.Reset(fds[1]);
  g_signal_pipe = write_end_.get();
  struct sigaction action = {};
  action.sa_handler = OnSignal;
  sigemptyset(&action.sa_mask);
  for (size_t i = 0; i < std::size(kSignals); ++i) {
    if (sigaction(kSignals[i], &action, &saved_[i]) != 0) return FailSys("sigaction");
  }
  struct sigaction ignore = {};
  ignore.sa_handler = SIG_IGN;
  sigaction(SIGPIPE, &ignore, nullptr);
  installed_ = true;
  return {};
}

ShutdownSignals::~ShutdownSignals() {
  if (!installed_) return;
  for (size_t i = 0; i < std::size(kSignals); ++i) sigaction(kSignals[i], &saved_[i], nullptr);
  g_signal_pipe = -1;
}

std::string ShutdownSignals::Take() {
  unsigned char signo = 0;
  if (read(read_end_.get(), &signo, 1) != 1) return "signal";
  if (signo == 0) return "";
  return std::string("signal ") + strsignal(signo);
}

std::string ShutdownSignals::Wait() {
  for (;;) {
    struct pollfd p = {read_end_.get(), POLLIN, 0};
    int ready = poll(&p, 1, -1);
    if (ready < 0 && errno == EINTR) continue;
    return Take();
  }
}

std::optional<std::string> ShutdownSignals::WaitFor(std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    struct pollfd p = {read_end_.get(), POLLIN, 0};
    int ready = poll(&p, 1, static_cast<int>(std::max<int64_t>(left.count(), 0)));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) return std::nullopt;
    return Take();
  }
}

void ShutdownSignals::Wake() {
  unsigned char zero = 0;
  ssize_t ignored = write(write_end_.get(), &zero, 1);
  (void)ignored;
}

}  // namespace sandbox::mcp
