// Runs in: sandbox-init, the first process of every sandbox. Agent serves the agent protocol
// (runtime/agent/PROTOCOL.md) on one input and one output fd, supervises the persistent Python
// worker, fresh workers and shell commands, and reaps every child that ends up with it.
// Single-threaded: one poll() loop over the protocol fd, a signalfd and the children's pipes.
// Its definitions are split along the seams: agent.cc (the loop, the requests, what goes to the
// host), agent_workers.cc (the workers, their control channels, reaping), agent_run.cc (the
// run in flight: start, cancel, timeout, output, result); the file requests are FileService's,
// and when the preload zygote runs is PreloadZygote's.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/agent/init/child_process.h"
#include "runtime/agent/init/data_snapshot.h"
#include "runtime/agent/init/file_service.h"
#include "runtime/agent/init/output_capture.h"
#include "runtime/agent/init/preload_zygote.h"
#include "runtime/agent/run_messages.h"
#include "runtime/agent/wire.h"
#include "runtime/base/fd.h"
#include "runtime/base/result.h"

namespace sandbox::agent {

struct AgentConfig {
  std::string data_dir;                // realpath; /mnt/data in a sandbox
  std::string tmp_dir;                 // realpath; /tmp in a sandbox
  std::string python;                  // absolute path of the interpreter
  std::string worker_script;           // worker.py
  std::vector<std::string> child_env;  // environment of the worker and of shell commands
  // After SIGINT (Python) or SIGTERM (shell), how long the run may take to stop by itself
  // before its process group is killed.
  std::chrono::milliseconds interrupt_grace{1000};
  // Modules the preload zygote imports, comma-separated ("" = no zygote; workers start cold).
  std::string preload;
  // A pooled sandbox's zygote starts right after the hello. A session started cold waits for
  // the host's `preload` message (or a `warm` request): the server sends it in a quiet moment,
  // so that the imports never run beside a burst of creates and calls.
  bool preload_on_request = false;
};

class Agent {
 public:
  Agent(AgentConfig config, int in_fd, int out_fd);
  ~Agent();

  // Starts the worker, says hello, and serves requests until `shutdown`, EOF on the input or
  // SIGTERM/SIGINT/SIGHUP. Returns init's exit status (1 when the worker cannot start at all).
  int Serve();

 private:
  using Clock = std::chrono::steady_clock;

  // A child init supervises: a Python worker (persistent or fresh) or a shell command.
  struct Proc {
    enum class Role { kWorker, kFreshWorker, kShell };
    Role role = Role::kWorker;
    ChildProcess child;
    FrameDecoder control;
    bool ready = false;        // a worker sent "ready"
    bool ran_code = false;     // a worker has run a cell, so its death loses state
    bool from_zygote = false;  // forked by the preload zygote
    std::string python_version;
    std::string stderr_tail;  // stderr outside runs, kept for startup failures
    // Frames for the worker's control channel not yet written: init never blocks on a worker
    // that stops reading, it writes what the pipe takes when poll says it can.
    std::string control_out;
    size_t control_out_sent = 0;  // bytes of control_out already written
  };

  struct ActiveRun {
    uint64_t id = 0;
    bool shell = false;
    bool fresh = false;
    std::string code;
    Clock::time_point started;
    Clock::time_point deadline;
    std::optional<Clock::time_point> kill_at;  // end of the interrupt grace
    Proc* proc = nullptr;                      // worker_ or run_proc_
    bool code_sent = false;                    // Python: the cell went to the worker
    bool interrupted = false;
    bool killed = false;  // we sent SIGKILL to the group
    bool timed_out = false;
    bool cancelled = false;
    std::optional<OutputCapture> output;  // set when the run starts
    DataSnapshot before;
  };

  // What every Python worker (and the zygote) is started as, before the control channel.
  ChildSpec WorkerSpec() const;
  // `warm_up`: a worker forked from the zygote first runs the light warm-up (see Zygote::Fork);
  // only the one that replaces the cold persistent worker, so restarts stay as fast as forks.
  Status StartWorker(bool warm_up = false);
  Result<std::unique_ptr<Proc>> SpawnWorker(Proc::Role role, bool warm_up = false);

  void HandleInput();
  void HandleRequest(const Message& request);
  void HandleRun(uint64_t id, const Json& request);
  void HandleCancel(uint64_t id);
  // The zygote has imported the preload: a persistent worker that has run nothing is replaced
  // by one forked from it (it started cold so the hello was not held up by the imports).
  void OnZygoteReady();

  void HandleControl(Proc& proc);
  void FlushControl(Proc& proc);
  void HandleOutput(Proc& proc, int stream);
  // Reads what `stream` (1 stdout, 2 stderr) of `proc` has, at most `max_reads` reads: to the
  // run's output when `proc` runs it, else stderr's tail is kept for diagnostics.
  void ReadOutput(Proc& proc, int stream, int max_reads);
  void HandleSignals();
  void ReapChildren();
  void OnProcExit(Proc& proc, int wait_status);
  void OnWorkerReady(Proc& proc);
  void OnWorkerDone(Proc& proc, const Json& done);
  // The figures of a `done` message, read and bounded (run_limits.h).
  std::vector<FigureMessage> FiguresFromDone(const Json& done);

  void SendCode();
  void Interrupt();
  void KillRun();
  void CheckTimers();
  std::optional<Clock::time_point> NextTimer() const;
  void AddOutput(int stream, std::string_view data);
  void FlushOutput(bool force);
  void Drain(Proc& proc);
  // Sends the result: `result` holds what the ending process told (exit code, signal, figures);
  // the run's own facts (output, flags, artifacts, disk) are added here.
  void FinishRun(RunResultMessage result);
  void FailRun(const Error& error);

  // A non-empty payload goes as a binary frame after the message (read_file's content).
  void Send(const Json& message, std::string_view payload = {});
  void SendError(uint64_t id, const Error& error);
  void SendHello();

  AgentConfig config_;
  int in_fd_;
  int out_fd_;
  FileService file_service_;  // write_*, read_file, stat, list
  FrameDecoder input_;
  Fd signal_fd_;
  std::unique_ptr<Proc> worker_;    // the persistent Python worker
  std::unique_ptr<Proc> run_proc_;  // the fresh worker or shell of the run in flight
  std::optional<ActiveRun> run_;
  PreloadZygote preload_;
  bool hello_sent_ = false;
  bool state_lost_pending_ = false;  // the worker died between runs: tell the next run
  bool stopping_ = false;
  int exit_status_ = 0;
};

}  // namespace sandbox::agent
