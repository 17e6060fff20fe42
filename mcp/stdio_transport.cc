#include "mcp/stdio_transport.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include <spdlog/spdlog.h>

#include "mcp/jsonrpc.h"
#include "runtime/base/fd.h"
#include "runtime/base/files.h"

namespace sandbox::mcp {

namespace {

// The write end of the self-pipe the signal handler pokes (async-signal-safe: write(2) only).
std::atomic<int> g_signal_pipe{-1};

void OnTerminationSignal(int signo) {
  int fd = g_signal_pipe.load();
  if (fd >= 0) {
    unsigned char byte = static_cast<unsigned char>(signo);
    ssize_t ignored = write(fd, &byte, 1);
    (void)ignored;
  }
}

// The one writer of the protocol stream: whole lines, never interleaved.
class LineWriter {
 public:
  explicit LineWriter(int fd) : fd_(fd) {}

  void Write(const Json& message) {
    std::string line = Serialize(message);
    line += '\n';
    std::lock_guard<std::mutex> lock(mutex_);
    if (broken_) return;
    if (auto written = WriteAll(fd_, line); !written) {
      // EPIPE: the client is gone. Reading will see EOF too; stop writing.
      spdlog::warn("stdout: {}", written.error().message);
      broken_ = true;
    }
  }
  bool broken() {
    std::lock_guard<std::mutex> lock(mutex_);
    return broken_;
  }

 private:
  int fd_;
  std::mutex mutex_;
  bool broken_ = false;
};

class StdioReply : public Reply {
 public:
  explicit StdioReply(std::shared_ptr<LineWriter> writer) : writer_(std::move(writer)) {}
  void Send(const Json& message) override { writer_->Write(message); }
  void Close() override {}

 private:
  std::shared_ptr<LineWriter> writer_;
};

// Installs handlers for the signals that end serving, and restores the old ones on scope exit.
class SignalGuard {
 public:
  Status Install() {
    int fds[2];
    if (pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0) return FailSys("pipe2");
    read_end_.Reset(fds[0]);
    write_end_.Reset(fds[1]);
    g_signal_pipe = write_end_.get();
    struct sigaction action = {};
    action.sa_handler = OnTerminationSignal;
    sigemptyset(&action.sa_mask);
    for (size_t i = 0; i < std::size(kSignals); ++i) {
      if (sigaction(kSignals[i], &action, &saved_[i]) != 0) return FailSys("sigaction");
    }
    // A client that closed its end must not kill us with SIGPIPE: writes fail with EPIPE.
    struct sigaction ignore = {};
    ignore.sa_handler = SIG_IGN;
    sigaction(SIGPIPE, &ignore, nullptr);
    installed_ = true;
    return {};
  }
  ~SignalGuard() {
    if (!installed_) return;
    for (size_t i = 0; i < std::size(kSignals); ++i) sigaction(kSignals[i], &saved_[i], nullptr);
    g_signal_pipe = -1;
  }
  int read_fd() const { return read_end_.get(); }

 private:
  static constexpr int kSignals[] = {SIGTERM, SIGINT, SIGHUP};
  struct sigaction saved_[3] = {};
  bool installed_ = false;
  Fd read_end_;
  Fd write_end_;
};

}  // namespace

Status ServeStdio(Server& server, const StdioOptions& options,
                  const std::function<void()>& on_shutdown) {
  int out_fd = options.out_fd;
  Fd private_out;
  SignalGuard signals;
  if (options.own_process_stdio) {
    // Keep the protocol stream on a private descriptor and send anything else that writes to
    // fd 1 (a library's printf, a child that inherits it) to stderr instead.
    int fd = fcntl(options.out_fd, F_DUPFD_CLOEXEC, 3);
    if (fd < 0) return FailSys("fcntl(F_DUPFD_CLOEXEC)", "stdout");
    private_out.Reset(fd);
    out_fd = fd;
    if (dup2(STDERR_FILENO, STDOUT_FILENO) < 0) return FailSys("dup2", "stderr -> stdout");
    SBX_TRY(signals.Install());
  }

  auto writer = std::make_shared<LineWriter>(out_fd);
  auto reply = std::make_shared<StdioReply>(writer);
  auto connection = server.NewConnection();

  auto handle_line = [&](std::string_view line) {
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.find_first_not_of(" \t") == std::string_view::npos) return;
    auto value = ParseJson(line);
    if (!value) {
      writer->Write(MakeErrorResponse(nullptr, kParseError, "Parse error: the line is not JSON"));
      return;
    }
    connection->Handle(*value, reply);
  };

  std::string buffer;
  bool discarding = false;  // inside a line that exceeded max_line_bytes
  std::string reason = "end of input";
  char chunk[64 * 1024];
  for (;;) {
    if (writer->broken()) {
      reason = "stdout closed";
      break;
    }
    struct pollfd fds[2] = {{options.in_fd, POLLIN, 0}, {signals.read_fd(), POLLIN, 0}};
    int ready = poll(fds, signals.read_fd() >= 0 ? 2 : 1, -1);
    if (ready < 0) {
      if (errno == EINTR) continue;
      reason = "poll failed";
      break;
    }
    if (signals.read_fd() >= 0 && (fds[1].revents & POLLIN) != 0) {
      unsigned char signo = 0;
      ssize_t n = read(signals.read_fd(), &signo, 1);
      reason = n == 1 ? fmt::format("signal {}", strsignal(signo)) : "signal";
      break;
    }
    if ((fds[0].revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
    ssize_t n = read(options.in_fd, chunk, sizeof chunk);
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      reason = "read failed";
      break;
    }
    if (n == 0) break;
    std::string_view data(chunk, static_cast<size_t>(n));
    while (!data.empty()) {
      size_t newline = data.find('\n');
      if (discarding) {
        if (newline == std::string_view::npos) break;
        discarding = false;
        data.remove_prefix(newline + 1);
        continue;
      }
      if (newline == std::string_view::npos) {
        buffer.append(data);
        if (buffer.size() > options.max_line_bytes) {
          buffer.clear();
          discarding = true;
          writer->Write(
              MakeErrorResponse(nullptr, kInvalidRequest,
                                fmt::format("Invalid Request: message larger than {} bytes",
                                            options.max_line_bytes)));
        }
        break;
      }
      if (buffer.empty()) {
        handle_line(data.substr(0, newline));
      } else {
        buffer.append(data.substr(0, newline));
        handle_line(buffer);
        buffer.clear();
      }
      data.remove_prefix(newline + 1);
    }
  }
  if (!buffer.empty() && !discarding) handle_line(buffer);  // a last line without '\n'

  spdlog::info("stdio transport: {}; shutting down", reason);
  connection->CancelAll();
  if (on_shutdown) on_shutdown();
  server.Shutdown();
  return {};
}

}  // namespace sandbox::mcp
