#include "runtime/agent/init/agent.h"

#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include "runtime/agent/init/init_io.h"
#include "runtime/agent/messages.h"

namespace sandbox::agent {

Agent::Agent(AgentConfig config, int in_fd, int out_fd)
    : config_(std::move(config)),
      in_fd_(in_fd),
      out_fd_(out_fd),
      file_service_(config_.data_dir, config_.tmp_dir),
      preload_(WorkerSpec(), config_.preload, config_.preload_on_request,
               [this](uint64_t id, const WarmAnswer& answer) { Send(answer.ToJson(id)); }) {}

Agent::~Agent() {
  // Whatever is still running goes with init (as it would with pid 1 of a pid namespace).
  for (Proc* proc : {worker_.get(), run_proc_.get()}) {
    if (proc != nullptr) ::kill(-proc->child.pid, SIGKILL);
  }
  // preload_ kills the zygote.
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
    if (int zygote_fd = preload_.pending_fd(); zygote_fd >= 0) {
      fds.push_back({zygote_fd, POLLIN, 0});
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
          if (preload_.pending_fd() == fds[i].fd) OnZygoteReady();
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
    preload_.OnWarmRequest(id, hello_sent_);
  } else if (type == "preload") {
    preload_.OnPreloadRequest(hello_sent_);  // a notification: no answer
  } else if (type == "shutdown") {
    Send(OkAnswer{.size = std::nullopt}.ToJson(id));
    stopping_ = true;
  } else {
    SendError(id, MakeError(ErrorCode::kInvalidArgument, "unknown request type '{}'", type));
  }
}

// --- to the host -----------------------------------------------------------------------------

void Agent::Send(const Json& message, std::string_view payload) {
  std::string frame = payload.empty() ? EncodeFrame(message) : EncodeFrame(message, payload);
  if (ExceedsFrameLimit(frame)) {
    // The host would stop trusting the stream: answer with an error that fits instead.
    Log("an answer of " + std::to_string(frame.size()) + " bytes exceeds the frame limit");
    frame = EncodeFrame(
        ErrorAnswer(GetUint(message, "id"),
                    MakeError(ErrorCode::kInternal,
                              "the answer of {} bytes exceeds the agent protocol's frame limit",
                              frame.size())));
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
