// LiveSession: one session with a running sandbox, as the session manager holds it (the
// registry's map, a busy lease, the reaper's teardown list). Shared by the manager's parts:
// session_registry.h lists them, sandbox_starter.h starts their sandboxes, session_lifecycle.h
// creates, leases and closes them, session_hibernator.h saves and resumes them.
//
// Locking: none of its own. The fixed fields (id, owner, name, image, limits, created, the
// sandbox, agent and egress pointers, preload_priority) are set before it is listed and not
// changed after, except `created` on a resume (also before it is listed). The counters and flags
// are atomic. resume_note is read and cleared only by whoever holds the busy flag.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "runtime/agent/host/agent_client.h"
#include "runtime/backend.h"
#include "runtime/limits.h"
#include "runtime/session/cold_preload_priority.h"
#include "runtime/session/session_egress.h"

namespace sandbox {

struct LiveSession {
  std::string id;
  std::string owner;  // the subject that created it (session_owner.h); "" = the single user
  std::string name;
  std::string image;
  Limits limits;
  std::unique_ptr<Sandbox> sandbox;
  std::unique_ptr<AgentClient> agent;
  std::unique_ptr<SessionEgress> egress;  // null: no network (destroyed first: joins tunnels)
  std::atomic<bool> busy{false};
  std::atomic<bool> closed{false};
  std::chrono::system_clock::time_point created;
  std::atomic<int64_t> last_used_ms{0};  // system_clock ms; atomic so readers need no lock
  std::atomic<uint64_t> runs{0};
  // The bytes on its /mnt/data and /tmp after its last run, as the agent read them; -1 = not
  // known yet (no run since it started or resumed, or not a tmpfs).
  std::atomic<int64_t> data_bytes{-1};
  std::atomic<int64_t> tmp_bytes{-1};
  // Started cold with the preload, which its worker does not have yet: its CPU priority while
  // its zygote imports (cold_preload_priority.h). Null otherwise. Set before it is listed.
  std::shared_ptr<ColdPreloadPriority> preload_priority;
  // Resumed from its saved state: what could not be restored, for the next run's result.
  // Read and cleared under the busy flag.
  std::optional<std::vector<std::string>> resume_note;
  // The last use at which saving it failed: not retried until it is used again.
  std::atomic<int64_t> unsaveable_at_ms{-1};
  // Its worker died in a save (killed, e.g. out of memory): the next run says state_lost.
  std::atomic<bool> state_lost_in_save{false};
  // A hibernation holds (or is taking) its busy lease to save it: a call that finds it busy
  // waits for the save instead of failing (session_registry.h WaitWhileSaving). Set and cleared
  // under the registry's lock.
  std::atomic<bool> saving_to_hibernate{false};

  void Touch(std::chrono::system_clock::time_point now) {
    last_used_ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count();
  }
  std::chrono::system_clock::time_point LastUsed() const {
    return std::chrono::system_clock::time_point(std::chrono::milliseconds(last_used_ms.load()));
  }
};

}  // namespace sandbox
