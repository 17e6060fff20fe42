#include "mcp/stdio_transport.h"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include <spdlog/spdlog.h>

#include "mcp/jsonrpc.h"
#include "mcp/shutdown_signals.h"
#include "runtime/base/fd.h"
#include "runtime/base/files.h"

namespace sandbox::mcp {

namespace {

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

}  // namespace

Status ServeStdio(Server& server, const StdioOptions& options,
                  const std::function<void()>& on_shutdown) {
  int out_fd = options.out_fd;
  Fd private_out;
  ShutdownSignals signals;
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

  // `owner`, when given, holds the line's bytes: they are freed once parsed, so a large message
  // (an upload) is not held as text and as JSON while it is handled.
  auto handle_line = [&](std::string_view line, std::string* owner) {
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.find_first_not_of(" \t") == std::string_view::npos) return;
    auto value = ParseMessageJson(line);
    if (owner != nullptr) std::string().swap(*owner);
    if (!value) {
      writer->Write(MakeErrorResponse(nullptr, kParseError, value.error()));
      return;
    }
    connection->Handle(std::move(*value), reply);
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
    struct pollfd fds[2] = {{options.in_fd, POLLIN, 0}, {signals.fd(), POLLIN, 0}};
    int ready = poll(fds, signals.fd() >= 0 ? 2 : 1, -1);
    if (ready < 0) {
      if (errno == EINTR) continue;
      reason = "poll failed";
      break;
    }
    if (signals.fd() >= 0 && (fds[1].revents & POLLIN) != 0) {
      reason = signals.Take();
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
        handle_line(data.substr(0, newline), nullptr);
      } else {
        buffer.append(data.substr(0, newline));
        handle_line(buffer, &buffer);
        buffer.clear();
      }
      data.remove_prefix(newline + 1);
    }
  }
  if (!buffer.empty() && !discarding) handle_line(buffer, &buffer);  // a last line without '\n'

  spdlog::info("stdio transport: {}; shutting down", reason);
  connection->CancelAll();
  if (on_shutdown) on_shutdown();
  server.Shutdown();
  return {};
}

}  // namespace sandbox::mcp
