// Agent, continued: supervision of its children (runtime/agent/PROTOCOL.md "init <-> worker"):
// starting the persistent and fresh Python workers (forked from the preload zygote once it is
// ready), their control channel, their output outside runs, signals, reaping and deaths.
#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include "runtime/agent/init/agent.h"
#include "runtime/agent/init/init_io.h"
#include "runtime/agent/init/process_group.h"
#include "runtime/agent/run_limits.h"

namespace sandbox::agent {

namespace {

constexpr size_t kStderrTailBytes = 4096;
constexpr uint64_t kMaxFigureBytes = uint64_t{32} << 20;

}  // namespace

ChildSpec Agent::WorkerSpec() const {
  ChildSpec spec;
  spec.executable = config_.python;
  // -u: unbuffered stdout/stderr, so output streams while a cell runs.
  spec.argv = {config_.python, "-u", config_.worker_script};
  spec.env = config_.child_env;
  spec.cwd = config_.data_dir;
  return spec;
}

Status Agent::StartWorker(bool warm_up) {
  SBX_ASSIGN_OR_RETURN(worker_, SpawnWorker(Proc::Role::kWorker, warm_up));
  return {};
}

Result<std::unique_ptr<Agent::Proc>> Agent::SpawnWorker(Proc::Role role, bool warm_up) {
  auto proc = std::make_unique<Proc>();
  proc->role = role;
  if (Zygote* zygote = preload_.ready()) {
    // Shell commands never come here; a Python worker comes from the zygote when it can.
    auto forked = zygote->Fork(std::chrono::seconds(5), warm_up);
    if (forked) {
      proc->child = std::move(*forked);
      proc->from_zygote = true;
      return proc;
    }
    preload_.Drop(forked.error().message);
  }
  ChildSpec spec = WorkerSpec();
  spec.control_channel = true;
  SBX_ASSIGN_OR_RETURN(proc->child, SpawnChild(spec));
  return proc;
}

void Agent::OnZygoteReady() {
  if (!preload_.OnReadable()) return;  // dropped: workers start cold
  if (worker_ && !worker_->ran_code && !(run_ && run_->proc == worker_.get())) {
    ::kill(-worker_->child.pid, SIGKILL);  // its zombie is reaped with the others
    worker_.reset();
    if (auto started = StartWorker(/*warm_up=*/true); !started) {
      Log(started.error().message);
      preload_.MarkWarm();
    }
    return;  // warm once the new worker says ready (OnWorkerReady)
  }
  preload_.MarkWarm();
}

// --- children --------------------------------------------------------------------------------

void Agent::HandleControl(Proc& proc) {
  std::string data;
  bool open = ReadAvailable(proc.child.control_read.get(), data, kMaxDrainReads);
  proc.control.Append(data);
  for (;;) {
    auto next = proc.control.Next();
    if (!next) {
      // The worker's control channel is sandboxed code's to corrupt; a worker that does is
      // treated as dead (its exit finishes the run).
      Log("bad frame from the Python worker: " + next.error().message);
      ::kill(-proc.child.pid, SIGKILL);
      proc.child.control_read.Reset();
      return;
    }
    if (!next->has_value()) break;
    const Json& message = (*next)->json;
    std::string type = GetString(message, "type");
    if (type == "ready") {
      proc.ready = true;
      proc.python_version = GetString(message, "python");
      OnWorkerReady(proc);
    } else if (type == "done") {
      OnWorkerDone(proc, message);
      return;  // `proc` may be gone (a fresh worker is dropped after its run)
    }
  }
  if (!open) proc.child.control_read.Reset();
}

void Agent::HandleOutput(Proc& proc, int stream) { ReadOutput(proc, stream, 16); }

void Agent::ReadOutput(Proc& proc, int stream, int max_reads) {
  Fd& fd = stream == 1 ? proc.child.stdout_read : proc.child.stderr_read;
  if (!fd) return;
  std::string data;
  bool open = ReadAvailable(fd.get(), data, max_reads);
  if (!data.empty()) {
    if (run_ && run_->proc == &proc) {
      AddOutput(stream, data);
    } else if (stream == 2) {
      // Outside a run (a background thread, a worker that fails to start): keep the tail for
      // diagnostics, drop the rest.
      AppendTail(proc.stderr_tail, data, kStderrTailBytes);
    }
  }
  if (!open) fd.Reset();
}

void Agent::HandleSignals() {
  struct signalfd_siginfo info[8];
  for (;;) {
    ssize_t n = ::read(signal_fd_.get(), info, sizeof info);
    if (n <= 0) break;
    for (size_t i = 0; i < static_cast<size_t>(n) / sizeof info[0]; ++i) {
      if (info[i].ssi_signo == SIGCHLD) continue;  // reaped below, all at once
      Log("signal " + std::to_string(info[i].ssi_signo) + ": stopping");
      stopping_ = true;
    }
  }
  ReapChildren();
}

void Agent::ReapChildren() {
  // As pid 1 (or a child subreaper), every orphan of the sandbox ends up here: reap them all,
  // not only the ones init started, or they stay zombies for the sandbox's life.
  for (;;) {
    int status = 0;
    pid_t pid = ::waitpid(-1, &status, WNOHANG);
    if (pid <= 0) break;
    if (preload_.OnExited(pid, status)) continue;
    for (Proc* proc : {worker_.get(), run_proc_.get()}) {
      if (proc != nullptr && proc->child.pid == pid) {
        OnProcExit(*proc, status);
        break;
      }
    }
  }
}

void Agent::OnProcExit(Proc& proc, int wait_status) {
  bool persistent = &proc == worker_.get();
  Drain(proc);  // the last output, or why it could not start
  if (run_ && run_->proc == &proc) {
    if (proc.role != Proc::Role::kShell && !run_->code_sent && !run_->killed) {
      std::string tail = proc.stderr_tail;
      FailRun(MakeError(ErrorCode::kSandboxUnavailable,
                        "the Python worker exited before it was ready (status {:#x}): {}",
                        wait_status, tail));
    } else {
      RunResultMessage result;
      int signal_number = WIFSIGNALED(wait_status) ? WTERMSIG(wait_status) : 0;
      result.exit_code = signal_number != 0 ? 128 + signal_number : WEXITSTATUS(wait_status);
      result.term_signal = signal_number;
      bool worker = proc.role != Proc::Role::kShell;
      // A stopped shell command takes what it started in the background with it.
      if (!worker && run_->interrupted) ::kill(-proc.child.pid, SIGKILL);
      // A worker that ended while running a cell: killed by us (timeout, cancel) or by something
      // else (the OOM killer, a kill from another process, os._exit in the cell).
      result.worker_killed = worker && signal_number != 0 && !run_->killed;
      // (A worker killed while still starting, e.g. by a short timeout, had no state.)
      result.state_lost = persistent && (proc.ran_code || run_->code_sent);
      FinishRun(std::move(result));
    }
  } else if (persistent && !proc.ready && !hello_sent_) {
    SendError(0, MakeError(ErrorCode::kSandboxUnavailable,
                           "the Python worker exited during startup (status {:#x}): {}",
                           wait_status, proc.stderr_tail));
    stopping_ = true;
    exit_status_ = 1;
  } else if (persistent && proc.ran_code) {
    state_lost_pending_ = true;  // died between runs: the next run reports the loss
  }

  if (persistent) {
    bool was_ready = worker_->ready;
    bool from_zygote = worker_->from_zygote;
    worker_.reset();
    if (!was_ready && from_zygote && !stopping_) {
      // A forked worker that dies before it is ready says the zygote is no good: start cold.
      preload_.Drop("a worker it forked died before it was ready");
      was_ready = true;
    }
    // Restart now so the next cell does not wait for Python to start; a worker that never got
    // ready is only retried when a run asks for it, so a broken image cannot make init spin.
    if (was_ready && !stopping_) {
      if (auto started = StartWorker(); !started) Log(started.error().message);
    }
  } else if (&proc == run_proc_.get()) {
    run_proc_.reset();
  }
}

void Agent::OnWorkerReady(Proc& proc) {
  if (&proc == worker_.get() && !hello_sent_) {
    SendHello();
    preload_.OnHello();
  }
  if (&proc == worker_.get() && !preload_.warm() && preload_.ready()) preload_.MarkWarm();
  if (run_ && run_->proc == &proc && !run_->code_sent && !run_->interrupted) SendCode();
}

std::vector<FigureMessage> Agent::FiguresFromDone(const Json& done) {
  // The figure list is whatever the worker's pipe carried, and cell code can write there: at
  // most kMaxRunFigures distinct paths and kMaxRunFigureBytes in all are read (run_limits.h).
  std::vector<FigureMessage> figures;
  auto it = done.find("figures");
  if (it == done.end() || !it->is_array()) return figures;
  uint64_t budget = kMaxRunFigureBytes;
  size_t skipped = 0;
  std::vector<std::string> seen;
  for (const auto& entry : *it) {
    if (!entry.is_string()) continue;
    const std::string& path = entry.get_ref<const std::string&>();
    if (figures.size() >= kMaxRunFigures || budget == 0 || path.size() > kMaxReportedPathBytes ||
        std::find(seen.begin(), seen.end(), path) != seen.end()) {
      ++skipped;
      continue;
    }
    seen.push_back(path);
    auto png = file_service_.files().Read(path, std::min(kMaxFigureBytes, budget));
    if (!png) {
      Log("figure " + path.substr(0, 256) + ": " + png.error().message);
      continue;
    }
    budget -= std::min<uint64_t>(budget, png->size());
    figures.push_back(FigureMessage{.path = path, .png = std::move(*png)});
  }
  if (skipped > 0) {
    Log("the worker reported " + std::to_string(skipped) +
        " figure(s) past the run's bounds; left out");
  }
  return figures;
}

void Agent::OnWorkerDone(Proc& proc, const Json& done) {
  if (!run_ || run_->proc != &proc || run_->killed || GetUint(done, "id") != run_->id) return;
  proc.ran_code = true;
  Drain(proc);
  RunResultMessage result;
  result.exit_code = static_cast<int>(GetInt(done, "exit_code", 1));
  result.figures = FiguresFromDone(done);
  if (run_->interrupted) {
    // The cell was stopped (timeout, cancel) and the worker kept its state; what the cell
    // started in the background is stopped with it, as a killed worker's group would be.
    std::vector<pid_t> killed;
    if (int stray = KillGroupExcept(proc.child.pid, proc.child.pid, &killed); stray > 0) {
      Log("stopped " + std::to_string(stray) + " process(es) the interrupted cell left running");
      // Those the cell forked itself are the persistent worker's children: their zombies stay
      // (each holding a pid of the session's pids limit) until the worker waits for them, so it
      // is told which ones to reap. Grandchildren were reparented to init, which reaps them.
      if (proc.role != Proc::Role::kFreshWorker) {
        proc.control_out += EncodeFrame(Json{{"type", "reap"}, {"pids", killed}});
        FlushControl(proc);
      }
    }
  }
  bool fresh = proc.role == Proc::Role::kFreshWorker;
  FinishRun(std::move(result));
  if (fresh && run_proc_.get() == &proc) {
    // A fresh worker is thrown away with everything it started; its zombie is reaped later.
    ::kill(-proc.child.pid, SIGKILL);
    run_proc_.reset();
  }
}

}  // namespace sandbox::agent
