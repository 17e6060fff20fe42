// AgentClient: the server's side of the agent protocol (runtime/agent/PROTOCOL.md), over the
// ByteStream of one sandbox. One run at a time; Cancel() may be called from any thread while a
// run is in flight. Never writes to stdout.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "runtime/base/result.h"
#include "runtime/byte_stream.h"
#include "runtime/run.h"

namespace sandbox {

namespace agent {
class FrameDecoder;
struct Message;
}  // namespace agent

// Produces a file's content piece by piece for AgentClient::WriteFile: appends at most `max`
// bytes to `out`, nothing once the content is over. Lets a caller decode or generate content
// straight into the chunks that go to the sandbox instead of holding it whole.
using ContentSource = std::function<void(size_t max, std::string& out)>;

// What the agent said in its hello (valid after WaitReady succeeded).
struct AgentInfo {
  int protocol = 0;
  int init_pid = 0;            // as seen inside the sandbox (1 under the namespace backend)
  int worker_pid = 0;          // the first persistent worker; a restarted one has another pid
  std::string python_version;  // "3.11.2"
  std::string data_dir;        // "/mnt/data" in a sandbox
  std::string tmp_dir;
};

class AgentClient {
 public:
  explicit AgentClient(ByteStream& stream);
  ~AgentClient();

  // Waits for the agent's hello (the Python worker is up). Fails with kSandboxUnavailable.
  Status WaitReady(std::chrono::milliseconds timeout);

  // Runs a cell or a command. Errors are protocol or transport failures only; a failing cell
  // is a RunResult with exit_code != 0. A host-side deadline of timeout_s plus a grace period
  // guards against an agent that stops answering (kSandboxUnavailable).
  Result<RunResult> Run(const RunRequest& request, const OutputCallback& on_output = {});

  // Interrupts the run in flight, if any: SIGINT first, then the process group is killed.
  void Cancel();

  // Files: paths are absolute inside the sandbox, or relative to /mnt/data. Writes are allowed
  // under /mnt/data and /tmp only (kInvalidPath otherwise).
  Status WriteFile(const std::string& path, std::string_view content, bool overwrite,
                   uint32_t mode = 0644);  // kFileExists when !overwrite and it exists
  Status WriteFile(const std::string& path, const ContentSource& content, bool overwrite,
                   uint32_t mode = 0644);
  Result<std::string> ReadFile(const std::string& path, uint64_t max_bytes);  // kArtifactTooLarge
  Result<FileInfo> Stat(const std::string& path);                             // kNotFound
  Result<std::vector<FileInfo>> ListFiles(const std::string& path, bool recursive);

  // Waits until the persistent worker has the preload imported (SANDBOX_AGENT_PRELOAD; at once
  // without one). What was imported, and one line per module that failed, are kept in
  // preload(). kSandboxUnavailable when the agent does not answer within `timeout`, not
  // counting the time `uncounted` says (since the call) the sandbox was held back (the
  // background CPU cap: runtime/cgroup/background_cpu.h).
  Status WaitWarm(std::chrono::milliseconds timeout,
                  const std::function<Clock::duration()>& uncounted = {});
  struct Preload {
    std::vector<std::string> imported;
    std::vector<std::string> failed;
  };
  const Preload& preload() const { return preload_; }
  // Tells an agent started with SANDBOX_AGENT_PRELOAD_ON_REQUEST to start its zygote now (a
  // notification: nothing is awaited). Never waits for a call of this client: kBusy when one is
  // in flight (ask again later), kUnusable when the agent serves nothing more.
  enum class PreloadRequest { kSent, kBusy, kUnusable };
  PreloadRequest RequestPreload();

  // What the last run's result said (`preload_pending`): the persistent worker does not have
  // the preload yet. True before the first run; false for an agent without a preload.
  bool preload_pending() const { return preload_pending_; }

  // Asks the agent to exit. The backend kills the sandbox anyway.
  void Shutdown();

  const AgentInfo& info() const { return info_; }

  // Why the agent can serve nothing more (it stopped answering, its stream broke or it sent
  // garbage); empty while it is fine. Not to be called while a call of this client is running.
  std::string broken_reason();

  // Added to RunRequest::timeout_s for the host-side deadline: covers the interrupt grace,
  // the kill, and a fresh worker's start.
  static constexpr std::chrono::seconds kRunDeadlineGrace{30};
  // The host-side deadline of a file operation.
  static constexpr std::chrono::seconds kFileOpDeadline{120};

 private:
  // A non-empty payload goes as a binary frame after the request (write_chunk's content).
  Status SendRequest(const nlohmann::json& request, std::string_view payload = {});
  // Reads until the answer to `id` (skipping stale answers and the hello); an "error" answer
  // becomes its Error. Output events of `id` (their bytes the payload) go to `on_event`.
  // `extended`, if given, is asked again when `deadline` passes and may move it later.
  using DeadlineExtension = std::function<Clock::time_point()>;
  Result<agent::Message> Await(uint64_t id, Clock::time_point deadline,
                               const std::function<void(const agent::Message&)>& on_event,
                               const DeadlineExtension& extended = {});
  Result<agent::Message> ReadMessage(Clock::time_point deadline,
                                     const DeadlineExtension& extended = {});
  // Sends `request` (a typed message's ToJson(next_id_++)) and waits for its answer of
  // `expected_type`.
  Result<agent::Message> Exchange(const nlohmann::json& request, const char* expected_type,
                                  std::string_view payload = {});
  void RecordHello(const nlohmann::json& hello);
  tl::unexpected<Error> Broken(std::string message);

  ByteStream& stream_;
  std::mutex call_mutex_;  // one request/response exchange at a time
  // Guarded by call_mutex_:
  std::unique_ptr<agent::FrameDecoder> decoder_;
  uint64_t next_id_ = 1;
  bool ready_ = false;
  std::string broken_;  // why the stream is unusable (empty while it is fine)
  AgentInfo info_;
  Preload preload_;
  bool preload_pending_ = true;
  // Shared with Cancel():
  std::atomic<uint64_t> run_id_{0};  // the run in flight, 0 when none
  std::atomic<bool> cancel_requested_{false};
};

}  // namespace sandbox
