// Crash-safe records of live sandboxes (host side): state_dir/sessions/<session_id>.json,
// written when a sandbox starts and removed when it is gone, so that a restarted server (or
// `mcp-sandbox sessions gc`) can find and remove what a crashed one left behind.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "runtime/base/result.h"
#include "runtime/ns/process_identity.h"

namespace sandbox::ns {

struct SessionRecord {
  std::string session_id;
  ProcessIdentity init;           // the sandbox's pid 1, as seen on the host
  ProcessIdentity server;         // the server that started it (records of live servers are kept)
  uint32_t host_uid = 0;          // the host id the sandbox user maps to
  bool host_uid_claimed = false;  // root server: a HostIdAllocator claim to release
  std::vector<std::string> cgroups;  // informational: the session's cgroup directories
  std::string rootfs;                // the image tree it runs from (`image rm` refuses it)
};

std::string RecordToJson(const SessionRecord& record);
std::optional<SessionRecord> RecordFromJson(const std::string& json);

class SessionRecords {
 public:
  explicit SessionRecords(std::string dir);  // state_dir + "/sessions"
  const std::string& dir() const { return dir_; }

  // Atomic (temp file + rename). Not fsync'd: a record guards processes and cgroups, and a
  // power loss that could lose it takes those with it.
  Status Write(const SessionRecord& record);
  void Remove(const std::string& session_id);
  // The record of `session_id`, or nullopt when there is none (or it is unreadable).
  std::optional<SessionRecord> Read(const std::string& session_id) const;
  // Every readable record; unreadable files are logged and skipped.
  std::vector<SessionRecord> ReadAll() const;
  // Ids of the sandboxes still running (their init alive) from the tree `rootfs`.
  std::vector<std::string> RunningFrom(const std::string& rootfs) const;

 private:
  std::string PathFor(const std::string& session_id) const;
  std::string dir_;
};

}  // namespace sandbox::ns
