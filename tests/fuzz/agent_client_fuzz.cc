// Fuzz target: the host's side of the agent protocol (AgentClient), reading whatever a
// compromised sandbox could send: the input is the agent's whole output stream, its first byte
// picking how it is cut into reads. The client goes through what a session does: wait for the
// hello, run a cell and a command, write, read, stat and list files, shut down. Seeds answer
// each request (ids 1, 2, ...) well, so mutations reach every answer's parsing.
// Invariants: nothing throws or crashes, and no call waits for its deadline: at the end of the
// stream every call fails at once (a slow input is a libFuzzer timeout).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include <spdlog/spdlog.h>

#include "runtime/agent/host/agent_client.h"

namespace {

using namespace std::chrono_literals;

// The agent's side of the stream: serves the input, then EOF; swallows what the client writes.
class ScriptedStream : public sandbox::ByteStream {
 public:
  ScriptedStream(std::string_view script, size_t read_size)
      : script_(script), read_size_(read_size) {}
  sandbox::Result<size_t> Read(char* buf, size_t len, sandbox::Clock::time_point) override {
    size_t n = std::min({len, read_size_, script_.size()});
    std::copy_n(script_.data(), n, buf);
    script_.remove_prefix(n);
    return n;
  }
  sandbox::Status Write(std::string_view data) override {
    written_ += data.size();
    return {};
  }
  void CloseWrite() override {}

 private:
  std::string_view script_;
  size_t read_size_;
  size_t written_ = 0;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static bool quiet = [] {
    spdlog::set_level(spdlog::level::off);
    return true;
  }();
  (void)quiet;
  if (size == 0) return 0;
  size_t read_size = data[0] >= 128 ? size : 1 + data[0] % 97;
  ScriptedStream stream(std::string_view(reinterpret_cast<const char*>(data) + 1, size - 1),
                        read_size);
  sandbox::AgentClient client(stream);
  if (!client.WaitReady(1s)) return 0;
  sandbox::RunRequest python;
  python.code = "print(1)";
  size_t outputs = 0;
  (void)client.Run(python, [&](int, std::string_view) { ++outputs; });
  sandbox::RunRequest shell;
  shell.kind = sandbox::RunRequest::Kind::kShell;
  shell.code = "ls";
  (void)client.Run(shell);
  (void)client.WriteFile("/mnt/data/a.txt", std::string_view("hello"), true);
  (void)client.ReadFile("/mnt/data/a.txt", 1 << 20);
  (void)client.Stat("/mnt/data/a.txt");
  (void)client.ListFiles("/mnt/data", true);
  client.Shutdown();
  return 0;
}
