// SessionManager, the facade: construction and shutdown, the calls (run, files) under a busy
// lease, status and listing. Its parts: session_registry.h (the live sessions and the lookup
// rules), session_lifecycle.h (create, pool, lookup and lease, expiry, drain, close),
// session_hibernator.h (save, resume, fork) and sandbox_starter.h (a sandbox's start).
#include "runtime/session/session_manager.h"

#include <algorithm>
#include <atomic>
#include <thread>
#include <utility>

#include <spdlog/spdlog.h>

#include "runtime/base/units.h"
#include "runtime/metrics/sandbox_metrics.h"
#include "runtime/session/call_usage.h"
#include "runtime/session/session_lease.h"
#include "runtime/session/session_limits.h"
#include "runtime/session/session_metrics.h"

namespace sandbox {

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
  lifecycle_ = std::make_unique<SessionLifecycle>(config_, *backend_, starter_, *registry_);
  hibernator_ = std::make_unique<SessionHibernator>(config_, *registry_, *lifecycle_, saved_.get());
  lifecycle_->Start(saved_ ? hibernator_.get() : nullptr);
}

SessionManager::~SessionManager() {
  lifecycle_->Stop();  // the reaper and the pool first, so shutdown leaves no sandbox behind
  CloseAll();
}

SubjectQuota SessionManager::QuotaOf(const std::string& owner) const {
  return SubjectQuotaOf(config_, owner);
}

std::optional<PoolStats> SessionManager::PoolStatus() { return lifecycle_->PoolStatus(); }

Result<SessionInfo> SessionManager::Create(const SessionOptions& options) {
  SBX_ASSIGN_OR_RETURN(std::shared_ptr<LiveSession> session, lifecycle_->Create(options));
  return Describe(*session);
}

Status SessionManager::Close(const std::string& id, bool force, Teardown teardown) {
  return lifecycle_->Close(id, force, teardown);
}

void SessionManager::CloseAll() { lifecycle_->CloseAll(); }

int SessionManager::ExpireIdle() { return lifecycle_->ExpireIdle(); }

void SessionManager::StartDrain(std::chrono::milliseconds idle_ttl) {
  lifecycle_->StartDrain(idle_ttl);
}

Status SessionManager::Hibernate(const std::string& id) { return hibernator_->Hibernate(id); }

Result<SessionInfo> SessionManager::Fork(const std::string& id) {
  SBX_ASSIGN_OR_RETURN(std::string fork_id, hibernator_->Fork(id));
  return Get(fork_id);
}

SessionInfo SessionManager::Describe(const LiveSession& session) const {
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
  SBX_ASSIGN_OR_RETURN(std::shared_ptr<LiveSession> session, lifecycle_->Lookup(id));
  return Describe(*session);
}

std::vector<SessionInfo> SessionManager::List() {
  std::vector<std::shared_ptr<LiveSession>> sessions = registry_->Visible();
  std::vector<SessionInfo> infos;
  infos.reserve(sessions.size());
  for (auto& session : sessions) infos.push_back(Describe(*session));
  if (saved_) {
    for (const auto& meta : saved_->List()) {
      // A resumed session keeps its last save until it is saved again or closed (so a crash
      // loses only what came after): listed once, live.
      bool live = std::any_of(infos.begin(), infos.end(),
                              [&meta](const SessionInfo& info) { return info.id == meta.id; });
      // A sibling replica's saves (a shared state dir) are its own to show (SavedAndVisible).
      if (!live && !registry_->NamesAnotherReplica(meta.id) && ActingSubject::MaySee(meta.owner)) {
        infos.push_back(DescribeSaved(meta));
      }
    }
  }
  std::sort(infos.begin(), infos.end(),
            [](const SessionInfo& a, const SessionInfo& b) { return a.created < b.created; });
  return infos;
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

  SBX_ASSIGN_OR_RETURN(BusyLease session, lifecycle_->Acquire(id));
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
  SBX_ASSIGN_OR_RETURN(BusyLease session, lifecycle_->Acquire(id));
  return NoteRetirement(session->agent, session->agent->WriteFile(path, content, overwrite));
}

Status SessionManager::WriteFile(const std::string& id, const std::string& path, uint64_t size,
                                 const ContentSource& content, bool overwrite) {
  if (size > config_.max_upload_bytes) {
    return Fail(ErrorCode::kUploadTooLarge, "the file is {} bytes; the limit is {} bytes", size,
                config_.max_upload_bytes);
  }
  SBX_ASSIGN_OR_RETURN(BusyLease session, lifecycle_->Acquire(id));
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
  SBX_ASSIGN_OR_RETURN(BusyLease session, lifecycle_->Acquire(id));
  return NoteRetirement(session->agent, session->agent->ReadFile(path, max_bytes));
}

Result<FileInfo> SessionManager::Stat(const std::string& id, const std::string& path) {
  SBX_ASSIGN_OR_RETURN(BusyLease session, lifecycle_->Acquire(id));
  return NoteRetirement(session->agent, session->agent->Stat(path));
}

Result<std::vector<FileInfo>> SessionManager::ListFiles(const std::string& id,
                                                        const std::string& path, bool recursive) {
  SBX_ASSIGN_OR_RETURN(BusyLease session, lifecycle_->Acquire(id));
  return NoteRetirement(session->agent, session->agent->ListFiles(path, recursive));
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
