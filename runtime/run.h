// The product's vocabulary for running code and reading files in a sandbox: what a caller asks
// for and what comes back. The session manager, the MCP tools and `mcp-sandbox run` speak it;
// the agent client (runtime/agent/host) carries it over the wire.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/sandbox_layout.h"

namespace sandbox {

struct FileInfo {
  std::string path;  // absolute path inside the sandbox, e.g. "/mnt/data/out/chart.png"
  uint64_t size = 0;
  std::string mime_type;
  int64_t mtime_ms = 0;  // milliseconds since the epoch
  bool is_dir = false;
};

struct Figure {
  std::string path;  // where it was saved, under /mnt/data
  std::string png;   // the PNG bytes
};

struct RunRequest {
  enum class Kind { kPython, kShell };
  Kind kind = Kind::kPython;
  std::string code;                       // Python source, or a shell command for kShell
  bool fresh = false;                     // Python: run in a new worker (state of the old one kept)
  double timeout_s = 60;                  // interrupt, then kill the worker's process group
  uint64_t max_output_bytes = 100 << 10;  // per stream; beyond it the *_truncated flag is set
  std::string cwd = layout::kDataDir;     // shell commands
};

struct RunResult {
  int exit_code = 0;        // 0 ok; 1 for a Python exception; the shell's status
  std::string stdout_text;  // may hold invalid UTF-8: the MCP layer repairs it
  std::string stderr_text;  // for an exception, ends with the traceback
  bool stdout_truncated = false;
  bool stderr_truncated = false;
  bool timed_out = false;      // the timeout fired
  bool cancelled = false;      // Cancel() stopped it
  bool state_lost = false;     // the Python worker was killed and restarted
  bool worker_killed = false;  // the worker died of a signal it did not ask for (e.g. OOM)
  bool oom = false;            // set by the SessionManager: the memory limit killed it
  int term_signal = 0;         // the signal that ended it, if any
  double duration_s = 0;
  // What the call used, measured by the SessionManager around it (runtime/session/call_usage.h):
  // the sandbox's CPU seconds during the call, and its memory peak: of this call where the
  // kernel resets the mark ("call"), else the session's peak so far ("session"); "" when not
  // measured.
  double cpu_seconds = 0;
  uint64_t memory_peak_bytes = 0;
  std::string memory_peak_scope;
  // The bytes in use on the session's /mnt/data and /tmp (tmpfs) after the run, as the agent
  // read them (runtime/agent/init/disk_use.h); nullopt where it could not tell.
  std::optional<uint64_t> data_bytes;
  std::optional<uint64_t> tmp_bytes;
  std::vector<FileInfo> artifacts;  // files new or changed under /mnt/data during the run
  std::vector<Figure> figures;      // open matplotlib figures, as PNG (also saved as artifacts)
  // Set by the SessionManager on the first run after the session was resumed from its saved
  // state (docs/sessions.md "Hibernate, resume, fork"): what could not be restored, one
  // "name (type): reason" each, for the model to redo.
  bool resumed = false;
  std::vector<std::string> not_restored;
};

// Called with chunks of output while a run lasts (for progress and `run`'s live streaming).
// stream is 1 for stdout, 2 for stderr.
using OutputCallback = std::function<void(int stream, std::string_view chunk)>;

}  // namespace sandbox
