// `mcp-sandbox run --batch FILE|-`: the snippets of a JSONL file (run_batch_lines.h), each in
// a fresh sandbox of its own, `parallel` at once; one result line per snippet on `out`, in the
// order of the input, so the same batch gives the same file. Nothing is shared between two
// snippets: each has its own session (sandbox, uid, /mnt/data, /tmp), closed and torn down
// after its run, so a hang, a fork bomb or a full disk costs only its own slot (its limits).
// Progress and the summary go to stderr.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdio>
#include <istream>
#include <mutex>
#include <set>
#include <string>

#include "runtime/session/session_manager.h"

namespace sandbox::cli {

struct BatchOptions {
  int parallel = 1;
  int warm = 0;               // sandboxes started ahead for the next snippets (run_warm_sessions.h)
  bool progress_tty = false;  // stderr is a terminal: one line redrawn instead of a log
};

struct BatchSummary {
  size_t snippets = 0;   // lines that named a snippet, or tried to (blank lines not counted)
  size_t ran = 0;        // ran to a result (any exit code)
  size_t not_run = 0;    // bad lines and sandboxes that did not start
  size_t exit_zero = 0;  // ran and exited 0
  size_t timed_out = 0;
  size_t oom = 0;
  bool interrupted = false;
  double wall_s = 0;
};

// Runs every line of `in` through `manager`, whose session cap must allow `parallel`.
class BatchRun {
 public:
  BatchRun(SessionManager& manager, BatchOptions options) : manager_(manager), options_(options) {}
  BatchSummary Run(std::istream& in, std::FILE* out);
  // From another thread (the signal thread's): take no more lines, cancel the runs in flight.
  void Stop();

 private:
  class Worker;
  SessionManager& manager_;
  BatchOptions options_;
  std::atomic<bool> stopped_{false};
  std::mutex running_mutex_;
  std::set<CancelToken*> running_;  // the runs in flight, for Stop
};

// "ran 998 of 1000 snippets (2 not run): 950 exited 0, 40 non-zero, 5 timed out, 3 out of
// memory; 45.2 s, 22.1 per second".
std::string SummaryLine(const BatchSummary& summary);

}  // namespace sandbox::cli
