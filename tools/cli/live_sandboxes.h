// What `mcp-sandbox sessions ls` and `mcp-sandbox top` show of the namespace sandboxes recorded
// in a state dir, read from the host without the server: the record, whether the sandbox and its
// server live, and what a live one uses now: memory, CPU seconds and processes (its process tree
// in /proc), the bytes on its /mnt/data and /tmp (their tmpfs through /proc/PID/root) and the
// egress bytes its server publishes (runtime/session/egress_bytes_file.h). A figure this user
// may not read (another user's sandbox) is nullopt.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "runtime/backend.h"
#include "runtime/ns/session_record.h"

namespace sandbox::cli {

struct LiveSandbox {
  ns::SessionRecord record;
  bool alive = false;
  bool server_alive = false;
  SandboxUsage process;  // zero unless alive
  std::optional<uint64_t> data_bytes;
  std::optional<uint64_t> tmp_bytes;
  std::optional<uint64_t> egress_bytes;  // nullopt: no egress, or not published to this user
};

std::vector<LiveSandbox> ReadLiveSandboxes(const std::string& state_dir);

}  // namespace sandbox::cli
