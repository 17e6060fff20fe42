#include "runtime/agent/init/agent.h"

#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include "runtime/agent/init/disk_use.h"
#include "runtime/agent/init/process_group.h"
#include "runtime/agent/messages.h"
#include "runtime/agent/mime.h"
#include "runtime/agent/run_limits.h"
#include "runtime/base/base64.h"

namespace sandbox::agent {

namespace {

constexpr size_t kReadChunk = 65536;
// Bounds one drain of a pipe, so a background writer cannot keep init draining forever.
constexpr int kMaxDrainReads = 256;
constexpr size_t kStderrTailBytes = 4096;
// Both streams of a result, base64-encoded (4/3), stay well inside one frame (kMaxFrameBytes).
constexpr uint64_t kMaxOutputCap = uint64_t{32} << 20;
constexpr uint64_t kMaxFigureBytes = uint64_t{32} << 20;
// How long after a run a paused zygote waits before it continues importing: longer than the
// host takes to lower the session's CPU priority again once it has the result, and a client
// calling back to back keeps it paused.
constexpr std::chrono::milliseconds kZygoteResumeDelay{50};

void Log(const std::string& message) {
  std::string line = "sandbox-init: " + message + "\n";
  ssize_t ignored = ::write(2, line.data(), line.size());
  (void)ignored;
}

double Seconds(std::chrono::steady_clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

// Reads what is available on a non-blocking fd. Returns false at EOF or on a hard error.
bool ReadAvailable(int fd, std::string& out, int max_reads) {
  char buf[kReadChunk];
  for (int i = 0; i < max_reads; ++i) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n > 0) {
      out.append(buf, static_cast<size_t>(n));
      if (static_cast<size_t>(n) < sizeof buf) return true;
      continue;
    }
    if (n == 0) return false;
    if (errno == EINTR) continue;
    return errno == EAGAIN || errno == EWOULDBLOCK;
  }
  return true;
}

// Writes all of `data`, waiting for POLLOUT when the fd is non-blocking.
bool WriteFully(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t n = ::write(fd, data.data(), data.size());
    if (n > 0) {
      data.remove_prefix(static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      struct pollfd p {
        fd, POLLOUT, 0
      };
      ::poll(&p, 1, -1);
      continue;
    }
    return false;
  }
  return true;
}

}  // namespace

Agent::Agent(AgentConfig config, int in_fd, int out_fd)
    : config_(std::move(config)),
      in_fd_(in_fd),
      out_fd_(out_fd),
      file_service_(config_.data_dir, config_.tmp_dir) {}

Agent::~Agent() {
  // Whatever is still running goes with init (as it would with pid 1 of a pid namespace).
  for (Proc* proc : {worker_.get(), run_proc_.get()}) {
    if (proc != nullptr) ::kill(-proc->child.pid, SIGKILL);
  }
  zygote_.reset();  // kills it
}

int Agent::Serve() {
  sigset_t signals;
  sigemptyset(&signals);
  for (int sig : {SIGCHLD, SIGTERM, SIGINT, SIGHUP}) sigaddset(&signals, sig);
  sigprocmask(SIG_BLOCK, &signals, nullptr);
  signal_fd_.Reset(::signalfd(-1, &signals, SFD_CLOEXEC | SFD_NONBLOCK));
  if (!signal_fd_) {
    SendError(0, SysError("signalfd").Context("sandbox-init"));
    return 1;
  }
  if (auto started = StartWorker(); !started) {
    SendError(0, Error(started.error()).Context("starting the Python worker"));
    return 1;
  }

  std::vector<struct pollfd> fds;
  std::vector<std::pair<Proc*, int>> owners;  // what each pollfd is: (proc, 0 control|1|2)
  while (!stopping_) {
    fds.clear();
    owners.clear();
    fds.push_back({in_fd_, POLLIN, 0});
    owners.emplace_back(nullptr, -1);
    fds.push_back({signal_fd_.get(), POLLIN, 0});
    owners.emplace_back(nullptr, -2);
    for (Proc* proc : {worker_.get(), run_proc_.get()}) {
      if (proc == nullptr) continue;
      if (proc->child.control_read) {
        fds.push_back({proc->child.control_read.get(), POLLIN, 0});
        owners.emplace_back(proc, 0);
      }
      if (proc->child.control_write && proc->control_out_sent < proc->control_out.size()) {
        fds.push_back({proc->child.control_write.get(), POLLOUT, 0});
        owners.emplace_back(proc, 3);
      }
      if (proc->child.stdout_read) {
        fds.push_back({proc->child.stdout_read.get(), POLLIN, 0});
        owners.emplace_back(proc, 1);
      }
      if (proc->child.stderr_read) {
        fds.push_back({proc->child.stderr_read.get(), POLLIN, 0});
        owners.emplace_back(proc, 2);
      }
    }
    if (zygote_ && !zygote_->ready()) {
      fds.push_back({zygote_->socket_fd(), POLLIN, 0});
      owners.emplace_back(nullptr, 4);
    }
    int timeout_ms = -1;
    if (auto timer = NextTimer()) {
      auto wait = std::chrono::ceil<std::chrono::milliseconds>(*timer - Clock::now()).count();
      timeout_ms = static_cast<int>(std::clamp<int64_t>(wait, 0, 60000));
    }
    int ready = ::poll(fds.data(), static_cast<nfds_t>(fds.size()), timeout_ms);
    if (ready < 0 && errno != EINTR) {
      Log("poll failed: " + SysError("poll").message);
      return 1;
    }
    if (ready > 0) {
      // Children's pipes first (a "done" before the exit that follows it), then signals, then
      // new requests. A proc may go away while this loop runs: check it is still ours.
      for (size_t i = 2; i < fds.size(); ++i) {
        if (fds[i].revents == 0) continue;
        if (owners[i].second == 4) {
          if (zygote_ && !zygote_->ready() && zygote_->socket_fd() == fds[i].fd) OnZygoteReady();
          continue;
        }
        Proc* proc = owners[i].first;
        if (proc != worker_.get() && proc != run_proc_.get()) continue;
        if (owners[i].second == 0) {
          if (proc->child.control_read.get() == fds[i].fd) HandleControl(*proc);
        } else if (owners[i].second == 3) {
          if (proc->child.control_write.get() == fds[i].fd) FlushControl(*proc);
        } else {
          HandleOutput(*proc, owners[i].second);
        }
      }
      if (fds[1].revents != 0) HandleSignals();
      if (fds[0].revents != 0 && !stopping_) HandleInput();
    }
    CheckTimers();
  }
  return exit_status_;
}

Status Agent::StartWorker(bool warm_up) {
  SBX_ASSIGN_OR_RETURN(worker_, SpawnWorker(Proc::Role::kWorker, warm_up));
  return {};
}

Result<std::unique_ptr<Agent::Proc>> Agent::SpawnWorker(Proc::Role role, bool warm_up) {
  ChildSpec spec;
  spec.executable = config_.python;
  // -u: unbuffered stdout/stderr, so output streams while a cell runs.
  spec.argv = {config_.python, "-u", config_.worker_script};
  spec.env = config_.child_env;
  spec.cwd = config_.data_dir;
  spec.control_channel = true;
  auto proc = std::make_unique<Proc>();
  proc->role = role;
  if (zygote_ && zygote_->ready()) {
    // Shell commands never come here; a Python worker comes from the zygote when it can.
    auto forked = zygote_->Fork(std::chrono::seconds(5), warm_up);
    if (forked) {
      proc->child = std::move(*forked);
      proc->from_zygote = true;
      return proc;
    }
    DropZygote(forked.error().message);
  }
  SBX_ASSIGN_OR_RETURN(proc->child, SpawnChild(spec));
  return proc;
}

// --- the preload zygote ----------------------------------------------------------------------

void Agent::StartZygote() {
  if (config_.preload.empty()) {
    warm_ = true;
    return;
  }
  ChildSpec spec;
  spec.executable = config_.python;
  spec.argv = {config_.python, "-u", config_.worker_script};
  spec.env = config_.child_env;
  spec.cwd = config_.data_dir;
  auto zygote = Zygote::Start(spec, config_.preload);
  if (!zygote) {
    Log("preload zygote: " + zygote.error().message + "; workers start without the preload");
    warm_ = true;
    return;
  }
  zygote_ = std::move(*zygote);
}

void Agent::OnZygoteReady() {
  if (auto ready = zygote_->ReadReady(); !ready) {
    DropZygote(ready.error().message);
    return;
  }
  for (const auto& failure : zygote_->failed()) Log("preload: " + failure + " (left out)");
  // The persistent worker started cold so the hello was not held up by the imports; while it
  // has run nothing, one forked from the zygote (the modules imported) takes its place.
  if (worker_ && !worker_->ran_code && !(run_ && run_->proc == worker_.get())) {
    ::kill(-worker_->child.pid, SIGKILL);  // its zombie is reaped with the others
    worker_.reset();
    if (auto started = StartWorker(/*warm_up=*/true); !started) {
      Log(started.error().message);
      warm_ = true;
      AnswerWarm();
    }
    return;  // warm once the new worker says ready
  }
  warm_ = true;
  AnswerWarm();
}

void Agent::PauseZygote() {
  zygote_resume_at_.reset();
  if (!zygote_ || zygote_->ready() || zygote_paused_) return;
  // The whole group: the zygote is its leader, and nothing it started may go on meanwhile.
  if (::kill(-zygote_->pid(), SIGSTOP) == 0) zygote_paused_ = true;
}

void Agent::OnRunEnded() {
  auto resume = Clock::now() + kZygoteResumeDelay;
  if (zygote_paused_) zygote_resume_at_ = resume;
  // A zygote due during the run starts after it, as a paused one continues.
  if (zygote_at_ && *zygote_at_ < resume) zygote_at_ = resume;
}

void Agent::DropZygote(const std::string& why) {
  Log("preload zygote: " + why + "; workers start without the preload");
  zygote_.reset();
  zygote_paused_ = false;
  zygote_resume_at_.reset();
  warm_ = true;
  AnswerWarm();
}

void Agent::HandleWarm(uint64_t id) {
  warm_waiters_.push_back(id);
  if (warm_) AnswerWarm();
}

void Agent::AnswerWarm() {
  if (!warm_) return;
  Json imported = Json::array();
  Json failed = Json::array();
  if (zygote_ && zygote_->ready()) {
    for (const auto& name : zygote_->imported()) imported.push_back(name);
    for (const auto& failure : zygote_->failed()) failed.push_back(failure);
  }
  for (uint64_t id : warm_waiters_) {
    Send(Json{{"type", "warm"}, {"id", id}, {"imported", imported}, {"failed", failed}});
  }
  warm_waiters_.clear();
}

// --- requests --------------------------------------------------------------------------------

void Agent::HandleInput() {
  char buf[kReadChunk];
  ssize_t n = ::read(in_fd_, buf, sizeof buf);
  if (n == 0) {
    stopping_ = true;  // the host closed the stream: the sandbox is over
    return;
  }
  if (n < 0) {
    if (errno != EINTR && errno != EAGAIN) stopping_ = true;
    return;
  }
  input_.Append(std::string_view(buf, static_cast<size_t>(n)));
  for (;;) {
    auto next = input_.Next();
    if (!next) {
      SendError(0, std::move(next.error()).Context("protocol error from the host"));
      stopping_ = true;
      exit_status_ = 1;
      return;
    }
    if (!next->has_value()) return;
    HandleRequest(**next);
    if (stopping_) return;
  }
}

void Agent::HandleRequest(const Message& message) {
  const Json& request = message.json;
  uint64_t id = GetUint(request, "id");
  std::string type = GetString(request, "type");
  if (type == "run") {
    HandleRun(id, request);
  } else if (type == "cancel") {
    HandleCancel(id);
  } else if (FileService::Handles(type)) {
    Message answer = file_service_.Handle(id, type, message);
    Send(answer.json, answer.payload);
  } else if (type == "warm") {
    HandleWarm(id);
  } else if (type == "shutdown") {
    Send(Json{{"type", "ok"}, {"id", id}});
    stopping_ = true;
  } else {
    SendError(id, MakeError(ErrorCode::kInvalidArgument, "unknown request type '{}'", type));
  }
}

void Agent::HandleRun(uint64_t id, const Json& request) {
  if (run_) {
    SendError(id, MakeError(ErrorCode::kSessionBusy, "run {} is still in progress", run_->id));
    return;
  }
  std::string kind = GetString(request, "kind", "python");
  if (kind != "python" && kind != "shell") {
    SendError(id, MakeError(ErrorCode::kInvalidArgument, "unknown run kind '{}'", kind));
    return;
  }
  double timeout_s = GetDouble(request, "timeout_s", 60);
  if (!(timeout_s > 0) || timeout_s > 1e7) {
    SendError(id,
              MakeError(ErrorCode::kInvalidArgument, "timeout_s {} is out of range", timeout_s));
    return;
  }
  ActiveRun run;
  run.id = id;
  run.shell = kind == "shell";
  run.fresh = !run.shell && GetBool(request, "fresh");
  run.code = GetString(request, "code");
  run.started = Clock::now();
  run.output.emplace(std::min(GetUint(request, "max_output_bytes", 100 << 10), kMaxOutputCap),
                     run.started);
  run.deadline = run.started + std::chrono::duration_cast<Clock::duration>(
                                   std::chrono::duration<double>(timeout_s));
  run.before = DataSnapshot::Take(config_.data_dir);

  if (run.shell) {
    auto cwd = file_service_.files().Normalize(GetString(request, "cwd", config_.data_dir));
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
    PauseZygote();
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
  PauseZygote();
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
    if (zygote_ && zygote_->pid() == pid) {
      zygote_.reset();  // the group's other members (none between forks) go with it
      DropZygote("exited (status " + std::to_string(status) + ")");
      continue;
    }
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
      Json result;
      int signal_number = WIFSIGNALED(wait_status) ? WTERMSIG(wait_status) : 0;
      result["exit_code"] = signal_number != 0 ? 128 + signal_number : WEXITSTATUS(wait_status);
      result["term_signal"] = signal_number;
      bool worker = proc.role != Proc::Role::kShell;
      // A stopped shell command takes what it started in the background with it.
      if (!worker && run_->interrupted) ::kill(-proc.child.pid, SIGKILL);
      // A worker that ended while running a cell: killed by us (timeout, cancel) or by something
      // else (the OOM killer, a kill from another process, os._exit in the cell).
      result["worker_killed"] = worker && signal_number != 0 && !run_->killed;
      // (A worker killed while still starting, e.g. by a short timeout, had no state.)
      result["state_lost"] = persistent && (proc.ran_code || run_->code_sent);
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
      DropZygote("a worker it forked died before it was ready");
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
    // Only now: started next to the worker, the zygote's imports would hold up the hello.
    if (config_.preload_delay.count() == 0) {
      StartZygote();
    } else {
      zygote_at_ = Clock::now() + config_.preload_delay;
    }
  }
  if (&proc == worker_.get() && !warm_ && zygote_ && zygote_->ready()) {
    warm_ = true;
    AnswerWarm();
  }
  if (run_ && run_->proc == &proc && !run_->code_sent && !run_->interrupted) SendCode();
}

Json Agent::FiguresFromDone(const Json& done) {
  // The figure list is whatever the worker's pipe carried, and cell code can write there: at
  // most kMaxRunFigures distinct paths and kMaxRunFigureBytes in all are read (run_limits.h).
  Json figures = Json::array();
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
    figures.push_back(Json{{"path", path}, {"png", Base64Encode(*png)}});
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
  Json result;
  result["exit_code"] = GetInt(done, "exit_code", 1);
  result["term_signal"] = 0;
  result["worker_killed"] = false;
  result["state_lost"] = false;
  result["figures"] = FiguresFromDone(done);
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
}

std::optional<Agent::Clock::time_point> Agent::NextTimer() const {
  std::optional<Clock::time_point> next;
  auto consider = [&next](Clock::time_point t) {
    if (!next || t < *next) next = t;
  };
  if (!run_) {
    // Neither a zygote's start nor a paused one's continuing happens during a run.
    if (zygote_at_) consider(*zygote_at_);
    if (zygote_resume_at_) consider(*zygote_resume_at_);
    return next;
  }
  if (!run_->interrupted) consider(run_->deadline);
  if (run_->kill_at) consider(*run_->kill_at);
  if (auto flush = run_->output->NextFlush()) consider(*flush);
  return next;
}

void Agent::CheckTimers() {
  auto now = Clock::now();
  if (zygote_at_ && !run_ && now >= *zygote_at_) {
    zygote_at_.reset();
    StartZygote();
  }
  if (zygote_resume_at_ && !run_ && now >= *zygote_resume_at_) {
    zygote_resume_at_.reset();
    if (zygote_ && zygote_paused_) ::kill(-zygote_->pid(), SIGCONT);
    zygote_paused_ = false;
  }
  if (!run_) return;
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
    Send(Json{
        {"type", "output"}, {"id", run_->id}, {"stream", stream}, {"data", Base64Encode(chunk)}});
  });
}

void Agent::Drain(Proc& proc) {
  for (int stream = 1; stream <= 2; ++stream) ReadOutput(proc, stream, kMaxDrainReads);
}

void Agent::FinishRun(Json result) {
  ActiveRun& run = *run_;
  result["type"] = "result";
  result["id"] = run.id;
  result["stdout"] = Base64Encode(run.output->kept(1));
  result["stderr"] = Base64Encode(run.output->kept(2));
  result["stdout_truncated"] = run.output->truncated(1);
  result["stderr_truncated"] = run.output->truncated(2);
  result["timed_out"] = run.timed_out;
  result["cancelled"] = run.cancelled;
  if (!run.shell && !run.fresh && state_lost_pending_) {
    result["state_lost"] = true;
    state_lost_pending_ = false;
  }
  if (!result.contains("figures")) result["figures"] = Json::array();
  result["duration_s"] = Seconds(Clock::now() - run.started);
  Json artifacts = Json::array();
  for (const auto& file : run.before.ChangedIn(DataSnapshot::Take(config_.data_dir))) {
    if (artifacts.size() >= kMaxRunArtifacts) break;
    artifacts.push_back(Json{{"path", file.path},
                             {"size", file.size},
                             {"mime", std::string(MimeTypeForPath(file.path))},
                             {"mtime_ms", file.mtime_ms}});
  }
  result["artifacts"] = std::move(artifacts);
  result["disk"] = DiskUseJson(config_.data_dir, config_.tmp_dir);
  // The host keeps a session started cold at background CPU priority between its calls while
  // this is true (runtime/agent/PROTOCOL.md, `result`).
  if (!config_.preload.empty()) result["preload_pending"] = !warm_;
  run_.reset();
  Send(result);
  OnRunEnded();
}

void Agent::FailRun(const Error& error) {
  uint64_t id = run_->id;
  run_.reset();
  SendError(id, error);
  OnRunEnded();
}

// --- to the host -----------------------------------------------------------------------------

void Agent::Send(const Json& message, std::string_view payload) {
  std::string frame = payload.empty() ? EncodeFrame(message) : EncodeFrame(message, payload);
  if (ExceedsFrameLimit(frame)) {
    // The host would stop trusting the stream: answer with an error that fits instead.
    Log("an answer of " + std::to_string(frame.size()) + " bytes exceeds the frame limit");
    frame = EncodeFrame(Json{{"type", "error"},
                             {"id", GetUint(message, "id")},
                             {"code", std::string(ErrorCodeName(ErrorCode::kInternal))},
                             {"message", "the answer of " + std::to_string(frame.size()) +
                                             " bytes exceeds the agent protocol's frame limit"}});
  }
  if (!WriteFully(out_fd_, frame)) {
    stopping_ = true;  // the host is gone
  }
}

void Agent::SendError(uint64_t id, const Error& error) { Send(ErrorAnswer(id, error)); }

void Agent::SendHello() {
  hello_sent_ = true;
  Send(Hello{.protocol = kProtocolVersion,
             .init_pid = ::getpid(),
             .worker_pid = worker_->child.pid,
             .python = worker_->python_version,
             .data_dir = config_.data_dir,
             .tmp_dir = config_.tmp_dir}
           .ToJson());
}

}  // namespace sandbox::agent
