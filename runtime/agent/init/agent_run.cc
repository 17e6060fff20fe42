// Agent, continued: the run in flight (runtime/agent/PROTOCOL.md "Runs"): a `run` request
// started on the persistent worker, a fresh worker or a shell, its cancel, timeout and kill,
// its output events, and its result.
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include "runtime/agent/init/agent.h"
#include "runtime/agent/init/disk_use.h"
#include "runtime/agent/init/init_io.h"
#include "runtime/agent/init/process_group.h"
#include "runtime/agent/mime.h"
#include "runtime/agent/run_limits.h"

namespace sandbox::agent {

namespace {

// Both streams of a result, base64-encoded (4/3), stay well inside one frame (kMaxFrameBytes).
constexpr uint64_t kMaxOutputCap = uint64_t{32} << 20;

double Seconds(std::chrono::steady_clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

}  // namespace

void Agent::HandleRun(uint64_t id, const Json& request) {
  if (run_) {
    SendError(id, MakeError(ErrorCode::kSessionBusy, "run {} is still in progress", run_->id));
    return;
  }
  auto asked = RunRequestMessage::FromJson(request);
  if (asked.kind != "python" && asked.kind != "shell") {
    SendError(id, MakeError(ErrorCode::kInvalidArgument, "unknown run kind '{}'", asked.kind));
    return;
  }
  if (!(asked.timeout_s > 0) || asked.timeout_s > 1e7) {
    SendError(id, MakeError(ErrorCode::kInvalidArgument, "timeout_s {} is out of range",
                            asked.timeout_s));
    return;
  }
  ActiveRun run;
  run.id = id;
  run.shell = asked.kind == "shell";
  run.fresh = !run.shell && asked.fresh;
  run.code = std::move(asked.code);
  run.started = Clock::now();
  run.output.emplace(std::min(asked.max_output_bytes, kMaxOutputCap), run.started);
  run.deadline = run.started + std::chrono::duration_cast<Clock::duration>(
                                   std::chrono::duration<double>(asked.timeout_s));
  run.before = DataSnapshot::Take(config_.data_dir);

  if (run.shell) {
    auto cwd = file_service_.files().Normalize(asked.cwd.empty() ? config_.data_dir : asked.cwd);
    struct stat st {};
    if (cwd && (::stat(cwd->c_str(), &st) != 0 || !S_ISDIR(st.st_mode))) {
      cwd = Fail(ErrorCode::kInvalidPath, "cwd {} is not a directory", *cwd);
    }
    if (!cwd) {
      SendError(id, cwd.error());
      return;
    }
    ChildSpec spec;
    spec.executable = "/bin/sh";
    spec.argv = {"/bin/sh", "-c", run.code};
    spec.env = config_.child_env;
    spec.cwd = *cwd;
    auto child = SpawnChild(spec);
    if (!child) {
      SendError(id, std::move(child.error()).Context("starting /bin/sh"));
      return;
    }
    run_proc_ = std::make_unique<Proc>();
    run_proc_->role = Proc::Role::kShell;
    run_proc_->child = std::move(*child);
    run.proc = run_proc_.get();
    run.code_sent = true;
    run_ = std::move(run);
    preload_.OnRunStarted();
    return;
  }

  if (run.fresh) {
    auto fresh = SpawnWorker(Proc::Role::kFreshWorker);
    if (!fresh) {
      SendError(id, std::move(fresh.error()).Context("starting a fresh Python worker"));
      return;
    }
    run_proc_ = std::move(*fresh);
    run.proc = run_proc_.get();
  } else {
    if (!worker_) {
      if (auto started = StartWorker(); !started) {
        Error error = std::move(started.error()).Context("starting the Python worker");
        error.code = ErrorCode::kSandboxUnavailable;
        SendError(id, error);
        return;
      }
    }
    run.proc = worker_.get();
  }
  run_ = std::move(run);
  preload_.OnRunStarted();
  if (run_->proc->ready) SendCode();
}

void Agent::HandleCancel(uint64_t id) {
  if (!run_ || run_->id != id) return;  // finished already: nothing to cancel
  run_->cancelled = true;
  if (!run_->interrupted) {
    Interrupt();
  } else if (!run_->killed) {
    KillRun();  // a second cancel does not wait for the grace period
  }
}

// --- the run in flight -----------------------------------------------------------------------

void Agent::SendCode() {
  Proc& proc = *run_->proc;
  run_->code_sent = true;
  // Queued, not written through: a worker that stops reading its control channel (a cell can
  // make it) would otherwise hang init on code larger than the pipe. The run's deadline still
  // applies: the interrupt, then the kill, end such a run.
  proc.control_out += EncodeFrame(Json{{"type", "run"}, {"id", run_->id}, {"code", run_->code}});
  FlushControl(proc);
}

void Agent::FlushControl(Proc& proc) {
  while (proc.control_out_sent < proc.control_out.size() && proc.child.control_write) {
    std::string_view rest = std::string_view(proc.control_out).substr(proc.control_out_sent);
    ssize_t n = ::write(proc.child.control_write.get(), rest.data(), rest.size());
    if (n > 0) {
      proc.control_out_sent += static_cast<size_t>(n);
      if (proc.control_out_sent == proc.control_out.size()) {
        proc.control_out = std::string();
        proc.control_out_sent = 0;
      }
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;  // poll says when
    // EPIPE: the worker just died; its exit finishes the run.
    proc.control_out = std::string();
    proc.control_out_sent = 0;
    proc.child.control_write.Reset();
  }
}

void Agent::Interrupt() {
  run_->interrupted = true;
  pid_t pid = run_->proc->child.pid;
  if (run_->shell) {
    ::kill(-pid, SIGTERM);
  } else if (run_->code_sent) {
    // KeyboardInterrupt in the cell; the worker survives with its state if it stops in time.
    ::kill(pid, SIGINT);
  } else {
    KillRun();  // still starting: nothing to interrupt gracefully
    return;
  }
  run_->kill_at = Clock::now() + config_.interrupt_grace;
}

void Agent::KillRun() {
  run_->killed = true;
  run_->kill_at.reset();
  // The whole group: background children of the cell go too. The result is sent when the
  // worker (or shell) has been reaped.
  ::kill(-run_->proc->child.pid, SIGKILL);
  // gVisor's group kill is not atomic with a fork in flight: a child born during it lives on
  // (a fork bomb kept the pids limit full). The passes over /proc catch those.
  KillGroupExcept(run_->proc->child.pid, 0);
}

std::optional<Agent::Clock::time_point> Agent::NextTimer() const {
  std::optional<Clock::time_point> next;
  auto consider = [&next](Clock::time_point t) {
    if (!next || t < *next) next = t;
  };
  if (!run_) return preload_.NextTimer();  // the zygote's timers run between runs only
  if (!run_->interrupted) consider(run_->deadline);
  if (run_->kill_at) consider(*run_->kill_at);
  if (auto flush = run_->output->NextFlush()) consider(*flush);
  return next;
}

void Agent::CheckTimers() {
  auto now = Clock::now();
  if (!run_) {
    preload_.CheckTimers(now);
    return;
  }
  if (!run_->interrupted && now >= run_->deadline) {
    run_->timed_out = true;
    Interrupt();
  }
  if (run_ && run_->kill_at && now >= *run_->kill_at && !run_->killed) KillRun();
  if (run_) FlushOutput(false);
}

void Agent::AddOutput(int stream, std::string_view data) {
  run_->output->Add(stream, data);
  FlushOutput(false);
}

void Agent::FlushOutput(bool force) {
  run_->output->Flush(Clock::now(), force, [this](int stream, std::string_view chunk) {
    // The bytes as they came, as the event's payload (a binary frame).
    Send(OutputEvent{.stream = stream}.ToJson(run_->id), chunk);
  });
}

void Agent::Drain(Proc& proc) {
  for (int stream = 1; stream <= 2; ++stream) ReadOutput(proc, stream, kMaxDrainReads);
}

void Agent::FinishRun(RunResultMessage result) {
  ActiveRun& run = *run_;
  result.stdout_bytes = run.output->kept(1);
  result.stderr_bytes = run.output->kept(2);
  result.stdout_truncated = run.output->truncated(1);
  result.stderr_truncated = run.output->truncated(2);
  result.timed_out = run.timed_out;
  result.cancelled = run.cancelled;
  if (!run.shell && !run.fresh && state_lost_pending_) {
    result.state_lost = true;
    state_lost_pending_ = false;
  }
  result.duration_s = Seconds(Clock::now() - run.started);
  for (const auto& file : run.before.ChangedIn(DataSnapshot::Take(config_.data_dir))) {
    if (result.artifacts.size() >= kMaxRunArtifacts) break;
    result.artifacts.push_back(EntryMessage{.path = file.path,
                                            .size = file.size,
                                            .mime = std::string(MimeTypeForPath(file.path)),
                                            .mtime_ms = file.mtime_ms,
                                            .is_dir = false});
  }
  result.data_bytes = TmpfsUsedBytes(config_.data_dir);
  result.tmp_bytes = TmpfsUsedBytes(config_.tmp_dir);
  // The host keeps a session started cold at background CPU priority between its calls while
  // this is true (runtime/agent/PROTOCOL.md, `result`).
  if (preload_.enabled()) result.preload_pending = !preload_.warm();
  uint64_t id = run.id;
  run_.reset();
  Send(result.ToJson(id));
  preload_.OnRunEnded(Clock::now());
}

void Agent::FailRun(const Error& error) {
  uint64_t id = run_->id;
  run_.reset();
  SendError(id, error);
  preload_.OnRunEnded(Clock::now());
}

}  // namespace sandbox::agent
