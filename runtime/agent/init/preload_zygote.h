// Runs in: sandbox-init. When the preload zygote (zygote.h) runs, and who waits for it: its
// start (after the hello; for a session started cold, only once the host asks), its pause while
// a run is in flight, its drop when it fails, and the `warm` requests answered once the
// persistent worker has the preload (runtime/agent/PROTOCOL.md "The preload zygote").
// Agent owns one and tells it what happens; the workers themselves stay Agent's, which forks
// them from ready() and says when the persistent one has the preload (MarkWarm).
// Single-threaded, as init is.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "runtime/agent/init/child_process.h"
#include "runtime/agent/init/zygote.h"
#include "runtime/agent/messages.h"

namespace sandbox::agent {

class PreloadZygote {
 public:
  using Clock = std::chrono::steady_clock;
  // Answers one waiting `warm` request.
  using WarmAnswerSink = std::function<void(uint64_t id, const WarmAnswer& answer)>;

  // `modules`: comma-separated, "" for no zygote (workers start cold and are warm at once).
  // `on_request`: the zygote waits for the host's `preload` message or a `warm` request.
  PreloadZygote(ChildSpec worker_spec, std::string modules, bool on_request,
                WarmAnswerSink answer_warm);
  ~PreloadZygote();  // a zygote still running is killed with its group

  PreloadZygote(const PreloadZygote&) = delete;
  PreloadZygote& operator=(const PreloadZygote&) = delete;

  bool enabled() const { return !modules_.empty(); }
  // The persistent worker has the preload, or never will: `warm` requests are answered.
  bool warm() const { return warm_; }
  // The zygote to fork workers from, once it has imported the modules; else null.
  Zygote* ready() const { return zygote_ && zygote_->ready() ? zygote_.get() : nullptr; }

  // The hello went out (the first worker is ready): the zygote starts now, unless it waits
  // for the host. Started next to the worker, its imports would hold up the hello.
  void OnHello();
  // The host's `preload` notification. Before the hello it only marks the request (OnHello
  // starts the zygote then); after it, the zygote is due at once, or after the run in flight.
  void OnPreloadRequest(bool hello_sent);
  // A `warm` request: answered now when warm, else once warm; it also asks for the preload.
  void OnWarmRequest(uint64_t id, bool hello_sent);

  // A run started: a zygote still importing stops (SIGSTOP to its group). The host raises the
  // session's CPU priority for its calls only, and the imports must not ride on that raise.
  void OnRunStarted();
  // A run ended: a paused zygote continues, and a due one starts, kResumeDelay later.
  void OnRunEnded(Clock::time_point now);

  // The zygote's process (the leader of its group), -1 when none runs.
  pid_t pid() const { return zygote_ ? zygote_->pid() : -1; }
  // The socket to poll while the zygote imports; -1 when there is none to wait for.
  int pending_fd() const { return zygote_ && !zygote_->ready() ? zygote_->socket_fd() : -1; }
  // pending_fd() is readable: true when the zygote is ready (the caller then replaces an unused
  // cold worker, or calls MarkWarm); false when it failed and was dropped.
  bool OnReadable();
  // A process ended: true when it was the zygote (dropped; workers start cold from now on).
  bool OnExited(pid_t pid, int wait_status);
  // The zygote proved unusable (a fork failed, a forked worker died before it was ready).
  void Drop(const std::string& why);
  // The persistent worker has the preload (or cannot get it): answer whoever waits.
  void MarkWarm();

  // Timers run only between runs: neither a start nor a paused zygote's continuing happens
  // during one.
  std::optional<Clock::time_point> NextTimer() const;
  void CheckTimers(Clock::time_point now);

  // How long after a run a paused zygote waits before it continues: longer than the host
  // takes to lower the session's CPU priority again once it has the result, and a client
  // calling back to back keeps it paused.
  static constexpr std::chrono::milliseconds kResumeDelay{50};

 private:
  void Start();

  ChildSpec worker_spec_;
  std::string modules_;
  bool on_request_;
  WarmAnswerSink answer_warm_;
  std::unique_ptr<Zygote> zygote_;
  std::vector<uint64_t> warm_waiters_;  // `warm` requests not yet answered
  bool warm_ = false;
  bool requested_ = false;                      // the host asked for the zygote (on_request_)
  std::optional<Clock::time_point> start_at_;   // when the zygote is due (after a run)
  bool paused_ = false;                         // SIGSTOPped for a run
  std::optional<Clock::time_point> resume_at_;  // when a paused zygote continues
};

}  // namespace sandbox::agent
