// SessionHibernator (session_hibernator.h): a live session saved and its sandbox stopped, a saved
// one resumed into a new sandbox, a fork saved under a new id, each within its owner's
// saved-session budget (saved_budget.h).
#include "runtime/session/session_hibernator.h"

#include <algorithm>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <spdlog/spdlog.h>

#include "runtime/session/session_hibernation.h"
#include "runtime/session/session_id.h"
#include "runtime/session/session_lease.h"
#include "runtime/session/session_limits.h"

namespace sandbox {

SessionHibernator::SessionHibernator(const SessionConfig& config, SessionRegistry& registry,
                                     SessionLifecycle& lifecycle, SavedSessions* saved)
    : config_(config), registry_(registry), lifecycle_(lifecycle), saved_(saved) {}

Status SessionHibernator::SaveSession(LiveSession& session, const std::string& as_id,
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
                      SubjectQuotaOf(config_, session.owner).saved);
}

Status SessionHibernator::Hibernate(const std::string& id) {
  if (!saved_) {
    return Fail(ErrorCode::kInvalidArgument,
                "hibernation is off on this server (SANDBOX_HIBERNATE_AFTER_S=0)");
  }
  std::shared_ptr<LiveSession> live = registry_.Find(id);
  if (!live && saved_->Contains(id)) return {};  // hibernated already
  const int64_t last_used = live ? live->last_used_ms.load() : 0;
  auto started = std::chrono::steady_clock::now();
  Status saved;
  std::shared_ptr<LiveSession> saving;  // the session saved, whose waiting calls are let go after
  {
    SBX_ASSIGN_OR_RETURN(BusyLease session, lifecycle_.Acquire(id, /*for_hibernation=*/true));
    saving = session.shared();
    saved = SaveSession(*session, id, session->created);
    if (saved) {
      registry_.BeginHibernating(*session);
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
    // Its lease given back: a call that waited for the save takes the session as it is.
    registry_.MarkSaving(*saving, false);
    return saved;
  }
  saving.reset();
  // The last reference (a status or list call may hold one for a moment): the sandbox is
  // reaped and removed here, before a call naming the session goes on.
  for (int i = 0; i < 5000 && live.use_count() > 1; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  live.reset();
  registry_.EndHibernating(id);
  spdlog::info("session {} hibernated in {} ms (sandbox stopped)", id,
               std::chrono::duration_cast<std::chrono::milliseconds>(
                   std::chrono::steady_clock::now() - started)
                   .count());
  return {};
}

Result<std::string> SessionHibernator::Fork(const std::string& id) {
  if (!saved_) {
    return Fail(ErrorCode::kInvalidArgument,
                "forking needs hibernation, which is off on this server "
                "(SANDBOX_HIBERNATE_AFTER_S=0)");
  }
  const bool live = registry_.Find(id) != nullptr;
  std::string fork_id = NewSessionId(config_.replica_id);
  if (live) {
    SBX_ASSIGN_OR_RETURN(BusyLease session, lifecycle_.Acquire(id));
    SBX_TRY(SaveSession(*session, fork_id, lifecycle_.Now()));
  } else if (registry_.SavedAndVisible(id)) {
    SBX_ASSIGN_OR_RETURN(SavedSessionMeta meta, saved_->Meta(id));
    SBX_TRY(saved_->Copy(id, fork_id, meta.name, SubjectQuotaOf(config_, meta.owner).saved));
  } else {
    SBX_ASSIGN_OR_RETURN(std::shared_ptr<LiveSession> none, lifecycle_.Lookup(id));  // its error
    (void)none;
  }
  spdlog::info("session {} forked as {}", id, fork_id);
  return fork_id;
}

Result<std::shared_ptr<LiveSession>> SessionHibernator::Resume(const std::string& id) {
  std::lock_guard<std::mutex> resume_lock(resume_mutex_);
  if (auto resumed = registry_.Find(id)) return resumed;  // a concurrent call resumed it
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
  auto session = lifecycle_.StartSession(options, id, meta.owner);
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
  registry_.Add(*session);
  spdlog::info("session {} resumed in {} ms ({} bytes saved; {} item(s) not restored)", id,
               std::chrono::duration_cast<std::chrono::milliseconds>(
                   std::chrono::steady_clock::now() - started)
                   .count(),
               meta.size, report->not_restored.size());
  return session;
}

}  // namespace sandbox
