// The agent protocol's run messages (runtime/agent/PROTOCOL.md: `run`, `output`, `result`,
// `cancel`) as typed structs shared by init and the host client, as messages.h does for the
// others. Output bytes are not here: an `output` event's bytes are its payload (wire.h's
// Message). A result's captured output and figures travel as base64 inside the JSON; FromJson
// decodes them and fails only on base64 that does not decode.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "runtime/agent/messages.h"
#include "runtime/agent/wire.h"
#include "runtime/base/result.h"

namespace sandbox::agent {

// host → init: run a cell (kind "python") or a shell command (kind "shell").
struct RunRequestMessage {
  std::string kind = "python";
  std::string code;
  bool fresh = false;  // a new Python worker for this cell alone
  double timeout_s = 60;
  uint64_t max_output_bytes = 100 << 10;  // per stream
  std::string cwd;                        // shell only; empty: the data dir

  Json ToJson(uint64_t id) const;
  static RunRequestMessage FromJson(const Json& message);
};

// init → host, while a run lasts: output of `stream` (1 stdout, 2 stderr), its bytes the payload.
struct OutputEvent {
  int stream = 0;

  Json ToJson(uint64_t id) const;
  static OutputEvent FromJson(const Json& message);
};

// host → init: interrupt the run whose id the message carries. No answer of its own.
struct CancelRequest {
  Json ToJson(uint64_t run_id) const;
};

// A figure of a result: where it was saved, and its PNG bytes.
struct FigureMessage {
  std::string path;
  std::string png;
};

// init → host, the answer to `run`.
struct RunResultMessage {
  int exit_code = 0;
  std::string stdout_bytes;
  std::string stderr_bytes;
  bool stdout_truncated = false;
  bool stderr_truncated = false;
  bool timed_out = false;
  bool cancelled = false;
  bool state_lost = false;
  bool worker_killed = false;
  int term_signal = 0;
  double duration_s = 0;
  std::vector<EntryMessage> artifacts;  // sent without is_dir (always files)
  std::vector<FigureMessage> figures;
  // `disk`: the bytes in use on the data and tmp dirs' tmpfs; absent where it is no tmpfs.
  std::optional<uint64_t> data_bytes;
  std::optional<uint64_t> tmp_bytes;
  // Only from an agent with a preload: its persistent worker does not have it yet.
  std::optional<bool> preload_pending;

  Json ToJson(uint64_t id) const;
  // Fails (kInvalidArgument) on base64 that does not decode; everything else as the Get*
  // readers do. No bound is applied here: the host bounds what it keeps (run_limits.h).
  static Result<RunResultMessage> FromJson(const Json& message);
};

}  // namespace sandbox::agent
