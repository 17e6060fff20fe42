// SessionLifecycle (session_lifecycle.h): creation (a pooled sandbox or a cold start, within the
// caps), lookup and the busy lease, the cold preload, closing and retiring, the reaper (idle
// expiry and hibernation, the drain, background teardown) and the orderly stop (CloseAll saves
// what it can).
#include "runtime/session/session_lifecycle.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <spdlog/spdlog.h>

#include "runtime/cgroup/background_cpu.h"
#include "runtime/metrics/sandbox_metrics.h"
#include "runtime/session/session_hibernator.h"
#include "runtime/session/session_id.h"
#include "runtime/session/session_limits.h"
#include "runtime/session/session_metrics.h"
#include "runtime/session/session_owner.h"

namespace sandbox {

namespace {

// How long an orderly stop may spend saving the live sessions, all together: well inside the
// packaged unit's TimeoutStopSec (60 s), so the sandboxes are torn down before a SIGKILL.
constexpr std::chrono::seconds kShutdownSaveBudget{20};
// How often the reaper looks for idle sessions.
constexpr std::chrono::seconds kReaperInterval{15};

}  // namespace

SessionLifecycle::SessionLifecycle(const SessionConfig& config, Backend& backend,
                                   const SandboxStarter& starter, SessionRegistry& registry)
    : config_(config), backend_(backend), starter_(starter), registry_(registry) {}

SessionLifecycle::~SessionLifecycle() { Stop(); }

void SessionLifecycle::Start(SessionHibernator* hibernator) {
  hibernator_ = hibernator;
  reaper_ = std::thread([this] { ReaperLoop(); });
  if (config_.pool_size > 0) {
    if (auto key_limits = EffectiveLimits(config_.limits, SessionOptions{}); key_limits) {
      PoolKey key{config_.default_image, *key_limits, config_.egress.enabled()};
      pool_ = std::make_unique<SandboxPool>(
          key, config_.pool_size,
          [this, key](StartCancel& cancel) { return starter_.StartPooled(key, &cancel); },
          [this] { return IdleFor(); });
    }
  }
}

void SessionLifecycle::Stop() {
  {
    std::lock_guard<std::mutex> lock(reaper_mutex_);
    stopping_ = true;
  }
  reaper_wake_.notify_all();
  if (reaper_.joinable()) reaper_.join();
  teardown_.clear();  // what the reaper had not got to yet
  pool_.reset();      // its sandboxes go first, so shutdown leaves none behind
}

SavedSessions* SessionLifecycle::saved() const {
  return hibernator_ != nullptr ? hibernator_->saved() : nullptr;
}

std::optional<PoolStats> SessionLifecycle::PoolStatus() {
  if (!pool_) return std::nullopt;
  return pool_->Stats();
}

Result<std::shared_ptr<LiveSession>> SessionLifecycle::Lookup(const std::string& id) {
  SBX_ASSIGN_OR_RETURN(SessionRegistry::Found found, registry_.Lookup(id));
  if (found.live) return found.live;
  // Found saved: the registry reads saved sessions only when hibernation is on.
  if (hibernator_ == nullptr) {
    return Fail(ErrorCode::kSessionNotFound, "session {} is saved, and hibernation is off", id);
  }
  return hibernator_->Resume(id);
}

Result<BusyLease> SessionLifecycle::Acquire(const std::string& id, bool for_hibernation) {
  std::shared_ptr<LiveSession> session;
  for (;;) {
    SBX_ASSIGN_OR_RETURN(session, Lookup(id));
    // Marked before the busy flag is taken, so a call never finds it busy and unmarked.
    if (for_hibernation) registry_.MarkSaving(*session, true);
    bool expected = false;
    if (session->busy.compare_exchange_strong(expected, true)) break;
    if (for_hibernation) registry_.MarkSaving(*session, false);
    // Busy being saved by the reaper (idle) or a hibernate call: the call goes on after it.
    if (for_hibernation || !registry_.WaitWhileSaving(*session)) {
      return Fail(ErrorCode::kSessionBusy,
                  "session {} is running another call; wait for it to finish", id);
    }
    // Let go of the saved session before looking it up again: the hibernation waits for the
    // last reference to reap its sandbox, and the lookup waits for the hibernation to end.
    session.reset();
  }
  if (session->closed) {
    if (for_hibernation) registry_.MarkSaving(*session, false);
    session->busy = false;
    return Fail(ErrorCode::kSessionNotFound, "session {} was just closed", id);
  }
  // A call: work someone waits for, at normal priority until the lease ends.
  if (session->preload_priority) session->preload_priority->CallBegins();
  return BusyLease(std::move(session), *this);
}

void SessionLifecycle::EndCall(const std::shared_ptr<LiveSession>& session) {
  MarkActivity();
  --calls_in_flight_;
  cgroup::BackgroundCpuCap::Instance().ForegroundEnds();
  session->Touch(Now());
  if (session->preload_priority && !session->closed) {
    session->preload_priority->CallEnds(session->agent->preload_pending());
  }
  // An agent that stopped answering (stopped, hung) or whose stream broke serves nothing
  // more: the session is closed, not left listed as idle and failing every call.
  if (!session->closed) {
    if (std::string why = session->agent->broken_reason(); !why.empty()) Retire(session, why);
  }
  session->busy = false;
}

BusyLease::BusyLease(std::shared_ptr<LiveSession> session, SessionLifecycle& lifecycle)
    : session_(std::move(session)), lifecycle_(&lifecycle) {
  ++lifecycle_->calls_in_flight_;
  // Someone waits for this call: background work is capped until the last such call ends.
  cgroup::BackgroundCpuCap::Instance().ForegroundBegins();
}

BusyLease::~BusyLease() {
  if (session_) lifecycle_->EndCall(session_);
}

void SessionLifecycle::ReaperLoop() {
  std::unique_lock<std::mutex> lock(reaper_mutex_);
  while (!stopping_) {
    // While draining, idleness is measured in seconds: look every second.
    if (teardown_.empty()) {
      reaper_wake_.wait_for(lock, draining_ ? std::chrono::milliseconds(1000) : ReaperInterval());
    }
    if (stopping_) break;
    std::vector<std::shared_ptr<LiveSession>> closed;
    closed.swap(teardown_);
    lock.unlock();
    for (auto& session : closed) (void)session->sandbox->Kill();
    closed.clear();  // the sandboxes' destructors reap and remove what they made
    int expired = ExpireIdle();
    if (expired > 0) spdlog::info("expired {} idle session(s)", expired);
    lock.lock();
  }
}

std::chrono::milliseconds SessionLifecycle::ReaperInterval() const {
  if (!saved()) return kReaperInterval;
  // A short SANDBOX_HIBERNATE_AFTER_S (tests, tight hosts) is honoured within a quarter of it.
  return std::clamp<std::chrono::milliseconds>(config_.hibernate_after / 4,
                                               std::chrono::milliseconds(200), kReaperInterval);
}

Result<std::shared_ptr<LiveSession>> SessionLifecycle::Create(const SessionOptions& options) {
  if (draining_) {
    return Fail(ErrorCode::kServerDraining,
                "this server{} is shutting down and takes no new sessions; call again to be "
                "placed on another replica (sessions already open here keep working)",
                config_.replica_id.empty() ? "" : " (replica " + config_.replica_id + ")");
  }
  const std::string owner = ActingSubject::Current() ? *ActingSubject::Current() : "";
  SBX_ASSIGN_OR_RETURN(std::shared_ptr<LiveSession> session, StartSession(options, "", owner));
  registry_.Add(session);
  metrics::SessionStarted(backend_.name());
  return session;
}

Result<std::shared_ptr<LiveSession>> SessionLifecycle::StartSession(const SessionOptions& options,
                                                                    const std::string& fixed_id,
                                                                    const std::string& owner) {
  // Someone waits for this start: background work is capped meanwhile (background_cpu.h).
  cgroup::ForegroundCall foreground;
  SessionOptions fitted = options;
  const SubjectQuota quota = SubjectQuotaOf(config_, owner);
  if (!owner.empty()) {
    SBX_TRY(FitToQuota(quota, config_.limits, fitted.memory_bytes, fitted.cpus));
  }
  SBX_ASSIGN_OR_RETURN(Limits limits, EffectiveLimits(config_.limits, fitted));
  SBX_ASSIGN_OR_RETURN(bool wants_egress, SessionWantsEgress(config_.egress, options.egress));
  std::string image_name = options.image.empty() ? config_.default_image : options.image;
  bool poolable = pool_ && pool_->key() == PoolKey{image_name, limits, wants_egress};
  std::optional<ResolvedImage> image;
  // A pooled sandbox has its image already; otherwise an unknown image fails before the cap.
  if (!poolable) {
    SBX_ASSIGN_OR_RETURN(image, starter_.Resolve(image_name));
  }

  SBX_ASSIGN_OR_RETURN(
      SessionRegistry::Reservation reservation,
      registry_.Reserve(owner, config_.max_sessions, owner.empty() ? 0 : quota.max_sessions));
  // Destroyed before the reservation: the activity is stamped before the place is given back,
  // so the pool never sees a quiet moment in between (IdleFor).
  struct ActivityStamp {
    SessionLifecycle* self;
    ~ActivityStamp() { self->MarkActivity(); }
  } activity_stamp{this};

  auto session = std::make_shared<LiveSession>();
  session->owner = owner;
  session->name = options.name;
  session->limits = limits;

  std::optional<WarmSandbox> started;
  if (poolable) started = pool_->Claim();
  bool pooled = started.has_value();
  if (!started) {
    if (!image) {
      SBX_ASSIGN_OR_RETURN(image, starter_.Resolve(image_name));
    }
    // Cold, but of the pool's kind: its workers get the preload too (ready a moment later).
    auto cold = starter_.Start(fixed_id.empty() ? NewSessionId(config_.replica_id) : fixed_id,
                               *image, limits, poolable, wants_egress);
    if (!cold) return Fail(std::move(cold.error()));
    started = std::move(*cold);
  }
  if (pooled) {
    // It waited at background priority so that refills never slow running calls; from now on
    // it runs calls itself. Failing that, it still works, only slower under contention.
    if (auto raised = started->sandbox->SetCpuPriority(CpuPriority::kNormal); !raised) {
      spdlog::warn("pooled sandbox {}: could not raise its CPU priority: {}", started->session_id,
                   raised.error().message);
    }
  }
  // A pooled sandbox's id was drawn when it started, but nobody has seen it before now. A
  // resumed session keeps its own id, whichever sandbox serves it.
  session->id = fixed_id.empty() ? started->session_id : fixed_id;
  session->image = started->image;
  session->sandbox = std::move(started->sandbox);
  session->agent = std::move(started->agent);
  session->egress = std::move(started->egress);
  session->created = Now();
  session->Touch(session->created);
  if (started->preload_on_request) QueueColdPreload(session);
  spdlog::info("session {} {} (image {}, backend {}{})", session->id,
               fixed_id.empty() ? "created" : "started to resume", session->image,
               session->sandbox->backend_name(), pooled ? ", from the pool" : "");
  return session;
}

void SessionLifecycle::QueueColdPreload(const std::shared_ptr<LiveSession>& session) {
  // Its CPU priority while the zygote imports: background from its turn on, raised for its own
  // calls (Acquire), normal for good once the preload is in place (cold_preload_priority.h).
  Sandbox* sandbox = session->sandbox.get();  // owned by the session, which the turn holds
  session->preload_priority = std::make_shared<ColdPreloadPriority>(
      session->id, [sandbox](CpuPriority priority) { return sandbox->SetCpuPriority(priority); });
  cold_preloads_.Add([weak = std::weak_ptr<LiveSession>(session)] {
    auto queued = weak.lock();
    if (!queued || queued->closed) return ColdPreloadQueue::Outcome::kGone;
    // Lowered before init hears of it, so not one import runs at the priority of calls.
    queued->preload_priority->ZygoteDue();
    switch (queued->agent->RequestPreload()) {
      case AgentClient::PreloadRequest::kSent:
        return ColdPreloadQueue::Outcome::kStarted;
      case AgentClient::PreloadRequest::kBusy:
        return ColdPreloadQueue::Outcome::kRetry;  // its own call runs: it stays due
      case AgentClient::PreloadRequest::kUnusable:
        break;
    }
    return ColdPreloadQueue::Outcome::kGone;
  });
}

void SessionLifecycle::MarkActivity() {
  last_activity_ns_.store(std::chrono::steady_clock::now().time_since_epoch().count());
}

std::chrono::steady_clock::duration SessionLifecycle::IdleFor() {
  if (calls_in_flight_ > 0 || registry_.creating() > 0) {
    return std::chrono::steady_clock::duration::zero();
  }
  std::chrono::steady_clock::time_point last{
      std::chrono::steady_clock::duration(last_activity_ns_.load())};
  return std::chrono::steady_clock::now() - last;
}

Status SessionLifecycle::Close(const std::string& id, bool force, Teardown teardown) {
  std::shared_ptr<LiveSession> session;
  bool acquired = false;
  for (;;) {
    if (saved() && ParseSessionId(id)) {
      const bool live = registry_.IsLive(id);
      // Closing a hibernated session deletes what was saved; nothing to wake for that.
      if (!live && registry_.SavedAndVisible(id) && saved()->Remove(id)) {
        spdlog::info("session {} closed (its saved state deleted)", id);
        return {};
      }
    }
    SBX_ASSIGN_OR_RETURN(session, Lookup(id));
    bool expected = false;
    acquired = session->busy.compare_exchange_strong(expected, true);
    if (acquired) break;
    // Busy being saved for hibernation (the reaper, a drain, a hibernate call): waited for as
    // a call waits (Acquire), even with force, so that no save is finished after the close;
    // then looked at again: hibernated (its save deleted above) or live again (closed below).
    // The session is let go first: the hibernation waits for its last reference.
    if (registry_.WaitWhileSaving(*session)) {
      session.reset();
      continue;
    }
    if (!force) {
      return Fail(ErrorCode::kSessionBusy,
                  "session {} is running a call; wait for it, or close with force", id);
    }
    break;
  }
  registry_.Remove(id);
  if (saved()) saved()->Remove(id);  // a resumed session's last save
  session->closed = true;
  if (session->egress) session->egress->Shutdown();  // its tunnels close with it
  if (acquired) session->busy = false;
  metrics::SessionClosed(backend_.name());
  spdlog::info("session {} closed", id);
  if (teardown == Teardown::kBackground) {
    {
      std::lock_guard<std::mutex> lock(reaper_mutex_);
      teardown_.push_back(std::move(session));
    }
    reaper_wake_.notify_all();
    return {};
  }
  // Kill now, so a run in flight (force) ends at once; the run's thread drops the last
  // reference and the destructor reaps and removes everything.
  if (auto killed = session->sandbox->Kill(); !killed) {
    spdlog::warn("session {}: kill: {}", id, killed.error().message);
  }
  return {};
}

void SessionLifecycle::Retire(const std::shared_ptr<LiveSession>& session, const std::string& why) {
  registry_.RemoveIf(session);
  session->closed = true;
  if (auto killed = session->sandbox->Kill(); !killed) {
    spdlog::warn("session {}: kill: {}", session->id, killed.error().message);
  }
  if (session->egress) session->egress->Shutdown();
  metrics::SessionClosed(backend_.name());
  spdlog::warn("session {} closed: its agent is unusable ({})", session->id, why);
}

void SessionLifecycle::CloseAll() {
  if (saved()) {
    // An orderly stop (stdin closed, SIGTERM, SIGINT): every session that is not in a call is
    // saved, together, so the next server on this state dir resumes them.
    std::vector<std::string> ids = registry_.Ids([](const LiveSession&) { return true; });
    // The saves get kShutdownSaveBudget together: a service manager kills what is left after
    // its own stop timeout (the unit's TimeoutStopSec), and a stop cut short by SIGKILL leaves
    // sandboxes and cgroups for the next start's sweep. A session still saving then is stopped
    // unsaved (its save fails at once), and says so in the log.
    struct Progress {
      std::mutex mutex;
      std::condition_variable done_cv;
      std::set<std::string> finished;
    };
    auto progress = std::make_shared<Progress>();
    std::vector<std::thread> savers;
    savers.reserve(ids.size());
    for (const auto& id : ids) {
      savers.emplace_back([this, id, progress] {
        if (auto hibernated = hibernator_->Hibernate(id); !hibernated) {
          spdlog::warn("session {} could not be saved at shutdown: {}", id,
                       hibernated.error().message);
        }
        std::lock_guard<std::mutex> lock(progress->mutex);
        progress->finished.insert(id);
        progress->done_cv.notify_all();
      });
    }
    {
      std::unique_lock<std::mutex> lock(progress->mutex);
      if (!progress->done_cv.wait_for(lock, kShutdownSaveBudget,
                                      [&] { return progress->finished.size() == ids.size(); })) {
        for (const auto& id : ids) {
          if (progress->finished.count(id) != 0) continue;
          std::shared_ptr<LiveSession> session = registry_.Find(id);
          if (!session) continue;
          spdlog::warn("session {}: its save at shutdown took longer than {} s; stopped unsaved",
                       id, kShutdownSaveBudget.count());
          (void)session->sandbox->Kill();
        }
      }
    }
    for (auto& saver : savers) saver.join();
  }
  auto sessions = registry_.TakeAll();
  for (auto& [id, session] : sessions) {
    session->closed = true;
    (void)session->sandbox->Kill();
    metrics::SessionClosed(backend_.name());
  }
  sessions.clear();  // destructors reap and clean (unless a run still holds one)
}

std::chrono::system_clock::time_point SessionLifecycle::Now() const {
  return config_.clock ? config_.clock() : std::chrono::system_clock::now();
}

int SessionLifecycle::ExpireIdle() {
  auto now = Now();
  std::chrono::system_clock::duration ttl = config_.ttl;
  if (draining_) {
    ttl = std::min(
        ttl, std::chrono::system_clock::duration(std::chrono::milliseconds(drain_idle_ms_.load())));
  }
  if (saved()) {
    // Hibernation instead of closing, in a drain too (after its idle time: the next server on
    // this state dir resumes them); one that cannot be saved is closed at the idle time-out.
    std::chrono::system_clock::duration hibernate_after = config_.hibernate_after;
    if (draining_) hibernate_after = std::min(hibernate_after, ttl);
    std::vector<std::string> idle = registry_.Ids([&](const LiveSession& session) {
      return !session.busy && now - session.LastUsed() > hibernate_after &&
             session.unsaveable_at_ms != session.last_used_ms;
    });
    for (const auto& id : idle) {
      if (auto hibernated = hibernator_->Hibernate(id); !hibernated) {
        spdlog::warn("session {} could not be hibernated: {}", id, hibernated.error().message);
      }
    }
    saved()->ExpireOld();
  }
  std::vector<std::string> expired = registry_.Ids(
      [&](const LiveSession& session) { return !session.busy && now - session.LastUsed() > ttl; });
  int closed = 0;
  for (const auto& id : expired) {
    if (Close(id, /*force=*/false, Teardown::kWait)) {
      ++closed;
      metrics::SessionExpired(backend_.name());
    }
  }
  return closed;
}

void SessionLifecycle::StartDrain(std::chrono::milliseconds idle_ttl) {
  drain_idle_ms_ = idle_ttl.count();
  draining_ = true;
  std::lock_guard<std::mutex> lock(reaper_mutex_);
  reaper_wake_.notify_all();
}

}  // namespace sandbox
