#include "runtime/agent/init/preload_zygote.h"

#include <signal.h>

#include <algorithm>
#include <utility>

#include "runtime/agent/init/init_io.h"

namespace sandbox::agent {

PreloadZygote::PreloadZygote(ChildSpec worker_spec, std::string modules, bool on_request,
                             WarmAnswerSink answer_warm)
    : worker_spec_(std::move(worker_spec)),
      modules_(std::move(modules)),
      on_request_(on_request),
      answer_warm_(std::move(answer_warm)) {}

PreloadZygote::~PreloadZygote() = default;  // ~Zygote kills the group, stopped or not

void PreloadZygote::OnHello() {
  if (!enabled() || !on_request_ || requested_) Start();  // with no modules: warm at once
}

void PreloadZygote::OnPreloadRequest(bool hello_sent) {
  if (!on_request_ || requested_) return;
  requested_ = true;
  // Before the hello, OnHello starts it. After it, the timer does, after the run in flight if
  // there is one (OnRunEnded moves it past the run's end).
  if (hello_sent && !zygote_ && !warm_) start_at_ = Clock::now();
}

void PreloadZygote::OnWarmRequest(uint64_t id, bool hello_sent) {
  warm_waiters_.push_back(id);
  if (warm_) {
    MarkWarm();
  } else {
    OnPreloadRequest(hello_sent);  // whoever waits for the preload wants it started
  }
}

void PreloadZygote::Start() {
  if (!enabled()) {
    MarkWarm();
    return;
  }
  auto zygote = Zygote::Start(worker_spec_, modules_);
  if (!zygote) {
    Log("preload zygote: " + zygote.error().message + "; workers start without the preload");
    MarkWarm();
    return;
  }
  zygote_ = std::move(*zygote);
}

void PreloadZygote::OnRunStarted() {
  resume_at_.reset();
  if (!zygote_ || zygote_->ready() || paused_) return;
  // The whole group: the zygote is its leader, and nothing it started may go on meanwhile.
  if (::kill(-zygote_->pid(), SIGSTOP) == 0) paused_ = true;
}

void PreloadZygote::OnRunEnded(Clock::time_point now) {
  auto resume = now + kResumeDelay;
  if (paused_) resume_at_ = resume;
  // A zygote due during the run starts after it, as a paused one continues.
  if (start_at_ && *start_at_ < resume) start_at_ = resume;
}

bool PreloadZygote::OnReadable() {
  if (auto ready = zygote_->ReadReady(); !ready) {
    Drop(ready.error().message);
    return false;
  }
  for (const auto& failure : zygote_->failed()) Log("preload: " + failure + " (left out)");
  return true;
}

bool PreloadZygote::OnExited(pid_t pid, int wait_status) {
  if (!zygote_ || zygote_->pid() != pid) return false;
  Drop("exited (status " + std::to_string(wait_status) + ")");
  return true;
}

void PreloadZygote::Drop(const std::string& why) {
  Log("preload zygote: " + why + "; workers start without the preload");
  zygote_.reset();  // the group's other members (none between forks) go with it
  paused_ = false;
  resume_at_.reset();
  start_at_.reset();
  MarkWarm();
}

void PreloadZygote::MarkWarm() {
  warm_ = true;
  WarmAnswer answer;
  if (Zygote* zygote = ready())
    answer = {.imported = zygote->imported(), .failed = zygote->failed()};
  auto waiters = std::exchange(warm_waiters_, {});
  for (uint64_t id : waiters) answer_warm_(id, answer);
}

std::optional<PreloadZygote::Clock::time_point> PreloadZygote::NextTimer() const {
  if (start_at_ && resume_at_) return std::min(*start_at_, *resume_at_);
  return start_at_ ? start_at_ : resume_at_;
}

void PreloadZygote::CheckTimers(Clock::time_point now) {
  if (start_at_ && now >= *start_at_) {
    start_at_.reset();
    Start();
  }
  if (resume_at_ && now >= *resume_at_) {
    resume_at_.reset();
    if (zygote_ && paused_) ::kill(-zygote_->pid(), SIGCONT);
    paused_ = false;
  }
}

}  // namespace sandbox::agent
