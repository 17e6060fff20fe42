// A session's egress byte count published for `mcp-sandbox sessions ls` and `top`, which run
// apart from the server and cannot ask it: <state_dir>/egress-bytes/<session_id>.bytes, 8 bytes
// mapped shared into the server, to which its egress proxy adds what it carries (an atomic add in
// memory: nothing is written per packet), read by the CLI through a mapping of its own. The
// server holds a shared flock on the file while the session lives (the lock goes with the
// process, also when it crashes): a file nobody locks is a dead server's, and `sessions gc`
// removes it. One descriptor and one page per session with egress.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "runtime/base/fd.h"
#include "runtime/base/result.h"

namespace sandbox {

// state_dir + "/egress-bytes": where a server publishes its sessions' egress bytes.
std::string EgressBytesDir(const std::string& state_dir);

class EgressBytesFile {
 public:
  // Creates <dir>/<session_id>.bytes (0600, dir made 0700 if missing), locked and mapped, at 0.
  static Result<std::unique_ptr<EgressBytesFile>> Create(const std::string& dir,
                                                         const std::string& session_id);
  ~EgressBytesFile();  // removes the file
  EgressBytesFile(const EgressBytesFile&) = delete;
  EgressBytesFile& operator=(const EgressBytesFile&) = delete;

  // The shared counter; the proxy adds to it (std::atomic_ref: the memory is the file's).
  uint64_t* counter() { return counter_; }

 private:
  EgressBytesFile() = default;
  Fd file_;
  uint64_t* counter_ = nullptr;
  std::string path_;
};

// The bytes published for `session_id` under `dir`, when a live server publishes them
// (nullopt: no such file, not readable by this user, or its server is gone).
std::optional<uint64_t> ReadEgressBytes(const std::string& dir, const std::string& session_id);

// Removes the .bytes files under `dir` that no server holds locked. Returns how many.
int SweepEgressBytesFiles(const std::string& dir);

}  // namespace sandbox
