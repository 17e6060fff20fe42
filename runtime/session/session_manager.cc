#include "runtime/session/session_manager.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <set>
#include <thread>
#include <utility>

#include <spdlog/spdlog.h>

#include "runtime/base/quoted.h"
#include "runtime/base/units.h"
#include "runtime/metrics/sandbox_metrics.h"
#include "runtime/session/call_usage.h"
#include "runtime/session/cold_preload_priority.h"
#include "runtime/session/quota_claim.h"
#include "runtime/session/session_hibernation.h"
#include "runtime/session/session_limits.h"
#include "runtime/session/session_metrics.h"
#include "runtime/session/session_registry.h"

namespace sandbox {

namespace {

// How long an orderly stop may spend saving the live sessions, all together: well inside the
// packaged unit's TimeoutStopSec (60 s), so the sandboxes are torn down before a SIGKILL.
constexpr std::chrono::seconds kShutdownSaveBudget{20};
// How often the reaper looks for idle sessions.
constexpr std::chrono::seconds kReaperInterval{15};

}  // namespace

// ---------------------------------------------------------------------------- CancelToken

void CancelToken::Cancel() {
  std::function<void()> hook;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    cancelled_ = true;
    hook = on_cancel_;
  }
  if (hook) hook();
}

bool CancelToken::cancelled() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return cancelled_;
}

// Holds a session's busy flag for one agent exchange; releases it (and stamps last use) on
// destruction.
class SessionManager::BusyLease {
 public:
  BusyLease(std::shared_ptr<Session> session, SessionManager& manager)
      : session_(std::move(session)), manager_(&manager) {
    ++manager_->calls_in_flight_;
  }
  BusyLease(BusyLease&&) noexcept = default;
  BusyLease& operator=(BusyLease&&) = delete;
  BusyLease(const BusyLease&) = delete;
  ~BusyLease() {
    if (!session_) return;
    manager_->MarkActivity();
    --manager_->calls_in_flight_;
    session_->Touch(manager_->Now());
    if (session_->preload_priority && !session_->closed) {
      session_->preload_priority->CallEnds(session_->agent->preload_pending());
    }
    // An agent that stopped answering (stopped, hung) or whose stream broke serves nothing
    // more: the session is closed, not left listed as idle and failing every call.
    if (!session_->closed) {
      if (std::string why = session_->agent->broken_reason(); !why.empty()) {
        manager_->Retire(session_, why);
      }
    }
    session_->busy = false;
  }
  Session& operator*() const { return *session_; }
  Session* operator->() const { return session_.get(); }

 private:
  std::shared_ptr<Session> session_;
  SessionManager* manager_;
};

// The error of a call that left the session's agent unusable says that the session is closed
// (the lease closes it), so the caller starts a new one instead of retrying this one.
template <typename T>
Result<T> NoteRetirement(const std::unique_ptr<AgentClient>& agent, Result<T> result) {
  if (!result && !agent->broken_reason().empty()) {
    result.error().message += "; the session is closed: create a new one";
  }
  return result;
}

// ---------------------------------------------------------------------------- SessionManager

SessionManager::SessionManager(SessionConfig config, std::shared_ptr<Backend> backend,
                               ImageResolver resolver)
    : config_(std::move(config)),
      backend_(std::move(backend)),
      starter_(config_, *backend_, std::move(resolver)) {
  // Egress reaches a sandbox only through a backend that passes the channel in; elsewhere the
  // policy is dropped here, so status and the tool descriptions never promise a network.
  if (config_.egress.enabled() && !backend_->SupportsEgress()) {
    spdlog::warn("the {} backend does not carry network egress yet: sandboxes have no network",
                 backend_->name());
    config_.egress = {};
  }
  // A previous server may have crashed and left sandboxes behind: sweep them before serving.
  if (backend_->egress_transport() == EgressTransport::kSocketPath && !config_.state_dir.empty()) {
    if (int swept = SweepEgressSockets(EgressSocketDir(config_.state_dir), kStaleEgressSocketAge);
        swept > 0) {
      spdlog::info("swept {} egress socket(s) left by an earlier server", swept);
    }
  }
  if (!config_.state_dir.empty()) (void)SweepEgressBytesFiles(EgressBytesDir(config_.state_dir));
  if (auto swept = backend_->SweepOrphans(); !swept) {
    spdlog::warn("orphan sweep failed: {}", swept.error().message);
  } else if (*swept > 0) {
    spdlog::info("swept {} sandbox(es) left by an earlier server", *swept);
  }
  if (config_.hibernate_after.count() > 0 && !config_.state_dir.empty()) {
    saved_ = std::make_unique<SavedSessions>(SavedSessionsConfig{
        .dir = config_.state_dir + "/hibernated",
        .max_total_bytes = config_.saved_max_bytes,
        .ttl = config_.saved_ttl,
        .clock = config_.clock,
    });
    if (int expired = saved_->ExpireOld(); expired > 0) {
      spdlog::info("{} saved session(s) expired", expired);
    }
  }
  registry_ = std::make_unique<SessionRegistry>(config_.replica_id, saved_.get());
  reaper_ = std::thread([this] { ReaperLoop(); });
  if (config_.pool_size > 0) {
    if (auto key_limits = EffectiveLimits(config_.limits, SessionOptions{}); key_limits) {
      PoolKey key{config_.default_image, *key_limits, config_.egress.enabled()};
      pool_ = std::make_unique<SandboxPool>(
          key, config_.pool_size, [this, key] { return starter_.StartPooled(key); },
          [this] { return IdleFor(); });
    }
  }
}

SessionManager::~SessionManager() {
  {
    std::lock_guard<std::mutex> lock(reaper_mutex_);
    stopping_ = true;
  }
  reaper_wake_.notify_all();
  if (reaper_.joinable()) reaper_.join();
  teardown_.clear();  // what the reaper had not got to yet
  pool_.reset();      // its sandboxes go first, so shutdown leaves none behind
  CloseAll();
}

void SessionManager::ReaperLoop() {
  std::unique_lock<std::mutex> lock(reaper_mutex_);
  while (!stopping_) {
    // While draining, idleness is measured in seconds: look every second.
    if (teardown_.empty()) {
      reaper_wake_.wait_for(lock, draining_ ? std::chrono::milliseconds(1000) : ReaperInterval());
    }
    if (stopping_) break;
    std::vector<std::shared_ptr<Session>> closed;
    closed.swap(teardown_);
    lock.unlock();
    for (auto& session : closed) (void)session->sandbox->Kill();
    closed.clear();  // the sandboxes' destructors reap and remove what they made
    int expired = ExpireIdle();
    if (expired > 0) spdlog::info("expired {} idle session(s)", expired);
    lock.lock();
  }
}

std::chrono::milliseconds SessionManager::ReaperInterval() const {
  if (!saved_) return kReaperInterval;
  // A short SANDBOX_HIBERNATE_AFTER_S (tests, tight hosts) is honoured within a quarter of it.
  return std::clamp<std::chrono::milliseconds>(config_.hibernate_after / 4,
                                               std::chrono::milliseconds(200), kReaperInterval);
}

Result<SessionInfo> SessionManager::Create(const SessionOptions& options) {
  if (draining_) {
    return Fail(ErrorCode::kServerDraining,
                "this server{} is shutting down and takes no new sessions; call again to be "
                "placed on another replica (sessions already open here keep working)",
                config_.replica_id.empty() ? "" : " (replica " + config_.replica_id + ")");
  }
  const std::string owner = ActingSubject::Current() ? *ActingSubject::Current() : "";
  SBX_ASSIGN_OR_RETURN(std::shared_ptr<Session> session, StartSession(options, "", owner));
  SessionInfo info = Describe(*session);
  registry_->Add(session);
  metrics::SessionStarted(backend_->name());
  return info;
}

SubjectQuota SessionManager::QuotaOf(const std::string& owner) const {
  auto claim = owner.empty() ? std::nullopt : RememberedQuotaClaim(owner);
  return claim
             ? ApplyQuotaClaim(config_.subject_quota, *claim, config_.limits, config_.max_sessions)
             : config_.subject_quota;
}

Result<std::shared_ptr<SessionManager::Session>> SessionManager::StartSession(
    const SessionOptions& options, const std::string& fixed_id, const std::string& owner) {
  SessionOptions fitted = options;
  const SubjectQuota quota = QuotaOf(owner);
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
      registry_->Reserve(owner, config_.max_sessions, owner.empty() ? 0 : quota.max_sessions));
  // Destroyed before the reservation: the activity is stamped before the place is given back,
  // so the pool never sees a quiet moment in between (IdleFor).
  struct ActivityStamp {
    SessionManager* self;
    ~ActivityStamp() { self->MarkActivity(); }
  } activity_stamp{this};

  auto session = std::make_shared<Session>();
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

void SessionManager::QueueColdPreload(const std::shared_ptr<Session>& session) {
  // Its CPU priority while the zygote imports: background from its turn on, raised for its own
  // calls (Acquire), normal for good once the preload is in place (cold_preload_priority.h).
  Sandbox* sandbox = session->sandbox.get();  // owned by the session, which the turn holds
  session->preload_priority = std::make_shared<ColdPreloadPriority>(
      session->id, [sandbox](CpuPriority priority) { return sandbox->SetCpuPriority(priority); });
  cold_preloads_.Add([weak = std::weak_ptr<Session>(session)] {
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

void SessionManager::MarkActivity() {
  last_activity_ns_.store(std::chrono::steady_clock::now().time_since_epoch().count());
}

std::chrono::steady_clock::duration SessionManager::IdleFor() {
  if (calls_in_flight_ > 0 || registry_->creating() > 0) {
    return std::chrono::steady_clock::duration::zero();
  }
  std::chrono::steady_clock::time_point last{
      std::chrono::steady_clock::duration(last_activity_ns_.load())};
  return std::chrono::steady_clock::now() - last;
}

std::optional<PoolStats> SessionManager::PoolStatus() {
  if (!pool_) return std::nullopt;
  return pool_->Stats();
}

Result<std::shared_ptr<SessionManager::Session>> SessionManager::Lookup(const std::string& id) {
  SBX_ASSIGN_OR_RETURN(SessionRegistry::Found found, registry_->Lookup(id));
  if (found.live) return found.live;
  return Resume(id);
}

Result<SessionManager::BusyLease> SessionManager::Acquire(const std::string& id) {
  SBX_ASSIGN_OR_RETURN(std::shared_ptr<Session> session, Lookup(id));
  bool expected = false;
  if (!session->busy.compare_exchange_strong(expected, true)) {
    return Fail(ErrorCode::kSessionBusy,
                "session {} is running another call; wait for it to finish", id);
  }
  if (session->closed) {
    session->busy = false;
    return Fail(ErrorCode::kSessionNotFound, "session {} was just closed", id);
  }
  // A call: work someone waits for, at normal priority until the lease ends.
  if (session->preload_priority) session->preload_priority->CallBegins();
  return BusyLease(std::move(session), *this);
}

SessionInfo SessionManager::Describe(const Session& session) const {
  SessionInfo info;
  info.id = session.id;
  info.name = session.name;
  info.state = session.busy ? "busy" : "idle";
  info.image = session.image;
  info.backend = session.sandbox->backend_name();
  info.replica = config_.replica_id;
  info.created = session.created;
  info.last_used = session.LastUsed();
  info.runs = session.runs;
  info.limits = session.limits;
  info.enforced = session.sandbox->enforced_limits();
  info.usage = session.sandbox->Usage();
  if (int64_t data = session.data_bytes; data >= 0) info.data_bytes = static_cast<uint64_t>(data);
  if (int64_t tmp = session.tmp_bytes; tmp >= 0) info.tmp_bytes = static_cast<uint64_t>(tmp);
  info.egress = DescribeEgress(config_.egress, session.egress.get());
  return info;
}

Result<SessionInfo> SessionManager::Get(const std::string& id) {
  if (saved_ && ParseSessionId(id)) {
    const bool live = registry_->IsLive(id);
    // Status does not wake a hibernated session.
    if (!live && registry_->SavedAndVisible(id)) {
      SBX_ASSIGN_OR_RETURN(SavedSessionMeta meta, saved_->Meta(id));
      return DescribeSaved(meta);
    }
  }
  SBX_ASSIGN_OR_RETURN(std::shared_ptr<Session> session, Lookup(id));
  return Describe(*session);
}

std::vector<SessionInfo> SessionManager::List() {
  std::vector<std::shared_ptr<Session>> sessions = registry_->Visible();
  std::vector<SessionInfo> infos;
  infos.reserve(sessions.size());
  for (auto& session : sessions) infos.push_back(Describe(*session));
  if (saved_) {
    for (const auto& meta : saved_->List()) {
      // A resumed session keeps its last save until it is saved again or closed (so a crash
      // loses only what came after): listed once, live.
      bool live = std::any_of(infos.begin(), infos.end(),
                              [&meta](const SessionInfo& info) { return info.id == meta.id; });
      if (!live && ActingSubject::MaySee(meta.owner)) infos.push_back(DescribeSaved(meta));
    }
  }
  std::sort(infos.begin(), infos.end(),
            [](const SessionInfo& a, const SessionInfo& b) { return a.created < b.created; });
  return infos;
}

Status SessionManager::Close(const std::string& id, bool force, Teardown teardown) {
  if (saved_ && ParseSessionId(id)) {
    const bool live = registry_->IsLive(id);
    // Closing a hibernated session deletes what was saved; nothing to wake for that.
    if (!live && registry_->SavedAndVisible(id) && saved_->Remove(id)) {
      spdlog::info("session {} closed (its saved state deleted)", id);
      return {};
    }
  }
  SBX_ASSIGN_OR_RETURN(std::shared_ptr<Session> session, Lookup(id));
  bool expected = false;
  bool acquired = session->busy.compare_exchange_strong(expected, true);
  if (!acquired && !force) {
    return Fail(ErrorCode::kSessionBusy,
                "session {} is running a call; wait for it, or close with force", id);
  }
  registry_->Remove(id);
  if (saved_) saved_->Remove(id);  // a resumed session's last save
  session->closed = true;
  if (session->egress) session->egress->Shutdown();  // its tunnels close with it
  if (acquired) session->busy = false;
  metrics::SessionClosed(backend_->name());
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

void SessionManager::Retire(const std::shared_ptr<Session>& session, const std::string& why) {
  registry_->RemoveIf(session);
  session->closed = true;
  if (auto killed = session->sandbox->Kill(); !killed) {
    spdlog::warn("session {}: kill: {}", session->id, killed.error().message);
  }
  if (session->egress) session->egress->Shutdown();
  metrics::SessionClosed(backend_->name());
  spdlog::warn("session {} closed: its agent is unusable ({})", session->id, why);
}

void SessionManager::CloseAll() {
  if (saved_) {
    // An orderly stop (stdin closed, SIGTERM, SIGINT): every session that is not in a call is
    // saved, together, so the next server on this state dir resumes them.
    std::vector<std::string> ids = registry_->Ids([](const Session&) { return true; });
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
        if (auto saved = Hibernate(id); !saved) {
          spdlog::warn("session {} could not be saved at shutdown: {}", id, saved.error().message);
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
          std::shared_ptr<Session> session = registry_->Find(id);
          if (!session) continue;
          spdlog::warn("session {}: its save at shutdown took longer than {} s; stopped unsaved",
                       id, kShutdownSaveBudget.count());
          (void)session->sandbox->Kill();
        }
      }
    }
    for (auto& saver : savers) saver.join();
  }
  auto sessions = registry_->TakeAll();
  for (auto& [id, session] : sessions) {
    session->closed = true;
    (void)session->sandbox->Kill();
    metrics::SessionClosed(backend_->name());
  }
  sessions.clear();  // destructors reap and clean (unless a run still holds one)
}

std::chrono::system_clock::time_point SessionManager::Now() const {
  return config_.clock ? config_.clock() : std::chrono::system_clock::now();
}

int SessionManager::ExpireIdle() {
  auto now = Now();
  std::chrono::system_clock::duration ttl = config_.ttl;
  if (draining_) {
    ttl = std::min(
        ttl, std::chrono::system_clock::duration(std::chrono::milliseconds(drain_idle_ms_.load())));
  }
  if (saved_) {
    // Hibernation instead of closing, in a drain too (after its idle time: the next server on
    // this state dir resumes them); one that cannot be saved is closed at the idle time-out.
    std::chrono::system_clock::duration hibernate_after = config_.hibernate_after;
    if (draining_) hibernate_after = std::min(hibernate_after, ttl);
    std::vector<std::string> idle = registry_->Ids([&](const Session& session) {
      return !session.busy && now - session.LastUsed() > hibernate_after &&
             session.unsaveable_at_ms != session.last_used_ms;
    });
    for (const auto& id : idle) {
      if (auto saved = Hibernate(id); !saved) {
        spdlog::warn("session {} could not be hibernated: {}", id, saved.error().message);
      }
    }
    saved_->ExpireOld();
  }
  std::vector<std::string> expired = registry_->Ids(
      [&](const Session& session) { return !session.busy && now - session.LastUsed() > ttl; });
  int closed = 0;
  for (const auto& id : expired) {
    if (Close(id, /*force=*/false)) {
      ++closed;
      metrics::SessionExpired(backend_->name());
    }
  }
  return closed;
}

void SessionManager::StartDrain(std::chrono::milliseconds idle_ttl) {
  drain_idle_ms_ = idle_ttl.count();
  draining_ = true;
  std::lock_guard<std::mutex> lock(reaper_mutex_);
  reaper_wake_.notify_all();
}

size_t SessionManager::SessionCount() { return registry_->Count(); }

size_t SessionManager::HibernatedCount() {
  if (!saved_) return 0;
  auto ids = SavedSessionIds(saved_->config().dir);
  return registry_->CountNotLive(ids);
}

Status SessionManager::CheckRunRequest(const RunRequest& request) const {
  if (request.code.size() > config_.max_code_bytes) {
    return Fail(ErrorCode::kCodeTooLarge,
                "the code is {} bytes; this server takes at most {} (SANDBOX_MAX_CODE_BYTES). "
                "Upload large inputs as files instead.",
                request.code.size(), FormatBytes(config_.max_code_bytes));
  }
  if (request.timeout_s > config_.exec_timeout_s) {
    return Fail(ErrorCode::kInvalidArgument,
                "timeout_s {} is above this server's maximum of {} s (SANDBOX_EXEC_TIMEOUT_S)",
                request.timeout_s, config_.exec_timeout_s);
  }
  return {};
}

Result<RunResult> SessionManager::Run(const std::string& id, RunRequest request,
                                      const OutputCallback& on_output, CancelToken* cancel) {
  if (request.timeout_s <= 0) request.timeout_s = config_.exec_timeout_s;
  SBX_TRY(CheckRunRequest(request));
  request.max_output_bytes = std::min(request.max_output_bytes, config_.max_output_bytes);
  if (request.max_output_bytes == 0) request.max_output_bytes = config_.max_output_bytes;

  SBX_ASSIGN_OR_RETURN(BusyLease session, Acquire(id));
  uint64_t oom_before = session->sandbox->OomKills();

  AgentClient* agent = session->agent.get();
  if (cancel != nullptr) {
    std::lock_guard<std::mutex> lock(cancel->mutex_);
    if (cancel->cancelled_) {
      return Fail(ErrorCode::kCancelled, "the call was cancelled before it started");
    }
    cancel->on_cancel_ = [agent] { agent->Cancel(); };
  }
  std::optional<CallUsage> usage;
  if (config_.measure_calls) usage.emplace(*session->sandbox);
  auto result = agent->Run(request, on_output);
  if (cancel != nullptr) {
    std::lock_guard<std::mutex> lock(cancel->mutex_);
    cancel->on_cancel_ = nullptr;
  }
  ++session->runs;
  if (!result) {
    if (session->closed) {
      return Fail(ErrorCode::kSessionNotFound, "session {} was closed during the call", id);
    }
    result = NoteRetirement(session->agent, std::move(result));
    return Fail(std::move(result.error()).Context(fmt::format("session {}", id)));
  }
  if (result->worker_killed && session->sandbox->OomKills() > oom_before) {
    result->oom = true;
  }
  if (session->state_lost_in_save.exchange(false)) result->state_lost = true;
  if (session->resume_note) {
    result->resumed = true;
    result->not_restored = std::move(*session->resume_note);
    session->resume_note.reset();
  }
  if (usage) usage->Finish(*result);
  if (result->data_bytes) session->data_bytes = static_cast<int64_t>(*result->data_bytes);
  if (result->tmp_bytes) session->tmp_bytes = static_cast<int64_t>(*result->tmp_bytes);
  CountRunEnd(backend_->name(), *result);
  return result;
}

Status SessionManager::WriteFile(const std::string& id, const std::string& path,
                                 std::string_view content, bool overwrite) {
  if (content.size() > config_.max_upload_bytes) {
    return Fail(ErrorCode::kUploadTooLarge, "the file is {} bytes; the limit is {} bytes",
                content.size(), config_.max_upload_bytes);
  }
  SBX_ASSIGN_OR_RETURN(BusyLease session, Acquire(id));
  return NoteRetirement(session->agent, session->agent->WriteFile(path, content, overwrite));
}

Status SessionManager::WriteFile(const std::string& id, const std::string& path, uint64_t size,
                                 const ContentSource& content, bool overwrite) {
  if (size > config_.max_upload_bytes) {
    return Fail(ErrorCode::kUploadTooLarge, "the file is {} bytes; the limit is {} bytes", size,
                config_.max_upload_bytes);
  }
  SBX_ASSIGN_OR_RETURN(BusyLease session, Acquire(id));
  uint64_t left = size;
  return NoteRetirement(session->agent,
                        session->agent->WriteFile(
                            path,
                            [&](size_t max, std::string& out) {
                              // Never more than announced, whatever the source would give.
                              size_t before = out.size();
                              content(static_cast<size_t>(std::min<uint64_t>(max, left)), out);
                              left -= std::min<uint64_t>(left, out.size() - before);
                            },
                            overwrite));
}

Result<std::string> SessionManager::ReadFile(const std::string& id, const std::string& path,
                                             uint64_t max_bytes) {
  SBX_ASSIGN_OR_RETURN(BusyLease session, Acquire(id));
  return NoteRetirement(session->agent, session->agent->ReadFile(path, max_bytes));
}

Result<FileInfo> SessionManager::Stat(const std::string& id, const std::string& path) {
  SBX_ASSIGN_OR_RETURN(BusyLease session, Acquire(id));
  return NoteRetirement(session->agent, session->agent->Stat(path));
}

Result<std::vector<FileInfo>> SessionManager::ListFiles(const std::string& id,
                                                        const std::string& path, bool recursive) {
  SBX_ASSIGN_OR_RETURN(BusyLease session, Acquire(id));
  return NoteRetirement(session->agent, session->agent->ListFiles(path, recursive));
}

// ---------------------------------------------------------------------------- Hibernation

Status SessionManager::SaveSession(Session& session, const std::string& as_id,
                                   std::chrono::system_clock::time_point created) {
  // The saved state must fit where it came from and will go back to: the session's memory.
  uint64_t cap = std::min(session.limits.memory_bytes, config_.saved_max_bytes);
  auto archive = SaveSessionState(*session.agent, cap, config_.exec_timeout_s);
  if (!archive) {
    if (StateLostInSave(archive.error())) session.state_lost_in_save = true;
    return Fail(std::move(archive.error()));
  }
  SavedSessionMeta meta{
      .id = as_id,
      .name = session.name,
      .image = session.image,
      .backend = std::string(session.sandbox->backend_name()),
      .limits = session.limits,
      .egress = session.egress != nullptr,
      .created = created,
      .saved_at = {},
      .size = 0,
      .sha256 = "",
      .mechanism = archive->save.mechanism,
      .not_saved = std::move(archive->save.not_restored),
      .owner = session.owner,
  };
  // As itself it may evict its owner's oldest saves; as a fork nothing (saved_budget.h).
  return saved_->Save(std::move(meta), archive->bytes,
                      as_id == session.id ? SaveKind::kSelf : SaveKind::kCopy,
                      QuotaOf(session.owner).saved);
}

Status SessionManager::Hibernate(const std::string& id) {
  if (!saved_) {
    return Fail(ErrorCode::kInvalidArgument,
                "hibernation is off on this server (SANDBOX_HIBERNATE_AFTER_S=0)");
  }
  std::shared_ptr<Session> live = registry_->Find(id);
  if (!live && saved_->Contains(id)) return {};  // hibernated already
  const int64_t last_used = live ? live->last_used_ms.load() : 0;
  auto started = std::chrono::steady_clock::now();
  Status saved;
  {
    SBX_ASSIGN_OR_RETURN(BusyLease session, Acquire(id));
    saved = SaveSession(*session, id, session->created);
    if (saved) {
      registry_->BeginHibernating(*session);
      session->closed = true;
      if (session->egress) session->egress->Shutdown();
      if (auto killed = session->sandbox->Kill(); !killed) {
        spdlog::warn("session {}: kill: {}", id, killed.error().message);
      }
    }
  }
  if (!saved) {
    // Left as it was, idle since its last call; not retried until it is used again.
    if (live && !live->busy) live->last_used_ms = last_used;
    if (live) live->unsaveable_at_ms = last_used;
    return saved;
  }
  // The last reference (a status or list call may hold one for a moment): the sandbox is
  // reaped and removed here, before a call naming the session goes on.
  for (int i = 0; i < 5000 && live.use_count() > 1; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  live.reset();
  registry_->EndHibernating(id);
  spdlog::info("session {} hibernated in {} ms (sandbox stopped)", id,
               std::chrono::duration_cast<std::chrono::milliseconds>(
                   std::chrono::steady_clock::now() - started)
                   .count());
  return {};
}

Result<SessionInfo> SessionManager::Fork(const std::string& id) {
  if (!saved_) {
    return Fail(ErrorCode::kInvalidArgument,
                "forking needs hibernation, which is off on this server "
                "(SANDBOX_HIBERNATE_AFTER_S=0)");
  }
  const bool live = registry_->Find(id) != nullptr;
  std::string fork_id = NewSessionId(config_.replica_id);
  if (live) {
    SBX_ASSIGN_OR_RETURN(BusyLease session, Acquire(id));
    SBX_TRY(SaveSession(*session, fork_id, Now()));
  } else if (registry_->SavedAndVisible(id)) {
    SBX_ASSIGN_OR_RETURN(SavedSessionMeta meta, saved_->Meta(id));
    SBX_TRY(saved_->Copy(id, fork_id, meta.name, QuotaOf(meta.owner).saved));
  } else {
    SBX_ASSIGN_OR_RETURN(std::shared_ptr<Session> none, Lookup(id));  // its error
    (void)none;
  }
  spdlog::info("session {} forked as {}", id, fork_id);
  return Get(fork_id);
}

Result<std::shared_ptr<SessionManager::Session>> SessionManager::Resume(const std::string& id) {
  std::lock_guard<std::mutex> resume_lock(resume_mutex_);
  if (auto resumed = registry_->Find(id)) return resumed;  // a concurrent call resumed it
  auto started = std::chrono::steady_clock::now();
  SBX_ASSIGN_OR_RETURN(SavedSessionMeta meta, saved_->Meta(id));
  if (meta.size > std::min(meta.limits.memory_bytes, config_.saved_max_bytes)) {
    return Fail(ErrorCode::kSandboxUnavailable,
                "the saved state of session {} is {} bytes, above its cap of {} bytes (its "
                "memory limit); it cannot be resumed. Close it and create a new one",
                id, meta.size, std::min(meta.limits.memory_bytes, config_.saved_max_bytes));
  }
  SBX_ASSIGN_OR_RETURN(std::string archive, saved_->LoadArchive(meta));
  SessionOptions options;
  options.name = meta.name;
  options.image = meta.image;
  options.memory_bytes = meta.limits.memory_bytes;
  options.cpus = meta.limits.cpus;
  options.pids = meta.limits.pids;
  options.disk_bytes = meta.limits.disk_bytes;
  if (!meta.egress) options.egress = false;
  // It stays its owner's: a subject that may not see it never got this far (SavedAndVisible).
  auto session = StartSession(options, id, meta.owner);
  if (!session) {
    return Fail(std::move(session.error()).Context(fmt::format("resume session {}", id)));
  }
  auto report = RestoreSessionState(*(*session)->agent, archive, config_.exec_timeout_s);
  if (!report) {
    (*session)->closed = true;
    (void)(*session)->sandbox->Kill();
    return Fail(std::move(report.error()).Context(fmt::format("resume session {}", id)));
  }
  std::vector<std::string> note;
  for (const auto& item : report->not_restored) {
    note.push_back(fmt::format("{} ({}): {}", item.name, item.type, item.reason));
  }
  (*session)->created = meta.created;
  (*session)->resume_note = std::move(note);
  registry_->Add(*session);
  spdlog::info("session {} resumed in {} ms ({} bytes saved; {} item(s) not restored)", id,
               std::chrono::duration_cast<std::chrono::milliseconds>(
                   std::chrono::steady_clock::now() - started)
                   .count(),
               meta.size, report->not_restored.size());
  return session;
}

SessionInfo SessionManager::DescribeSaved(const SavedSessionMeta& meta) const {
  SessionInfo info;
  info.id = meta.id;
  info.name = meta.name;
  info.state = "hibernated";
  info.image = meta.image;
  info.backend = meta.backend;
  info.replica = config_.replica_id;
  info.created = meta.created;
  info.last_used = meta.saved_at;
  info.limits = meta.limits;
  info.egress = DescribeEgress(config_.egress, nullptr);
  info.saved_bytes = meta.size;
  return info;
}

}  // namespace sandbox
