// Hibernation inside a session's sandbox: the two exchanges with its agent that save the session
// to an archive and restore one into a fresh sandbox (runtime/agent/session_state.py does the
// work in there). Backend-agnostic: only the agent protocol is used, so the namespace backend
// and the Docker fallback behave alike. What the sandbox sends back is hostile bytes: its size
// is bounded before it is read, and it is never unpacked here (runtime/session/saved_sessions.h
// stores it).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "runtime/agent/host/agent_client.h"
#include "runtime/base/result.h"
#include "runtime/session/saved_sessions.h"

namespace sandbox {

struct SavedArchive {
  std::string bytes;   // the tar archive, as the sandbox wrote it
  RestoreReport save;  // what was saved (restored = names) and left out, and with what
};

// Has the session's worker write its files and interpreter state to one archive in its tmp dir
// and reads it out; refuses (kArtifactTooLarge) an archive above max_bytes, judged in the
// sandbox and again here. The archive is deleted in the sandbox afterwards, so a session that
// goes on (fork) keeps no copy in its memory. When the worker died in the save (killed, e.g.
// out of memory: the session's variables are gone), the error carries the detail
// {kStateLostDetail, "true"}.
inline constexpr std::string_view kStateLostDetail = "state_lost";
bool StateLostInSave(const Error& error);
Result<SavedArchive> SaveSessionState(AgentClient& agent, uint64_t max_bytes, double timeout_s);

// Writes `archive` into a fresh sandbox's tmp dir and restores it there: files into the data
// dir, globals, modules, cwd and environment into the persistent worker.
Result<RestoreReport> RestoreSessionState(AgentClient& agent, std::string_view archive,
                                          double timeout_s);

}  // namespace sandbox
