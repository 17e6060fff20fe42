#include "tools/cli/run_batch.h"

#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "runtime/base/units.h"
#include "runtime/sandbox_layout.h"
#include "tools/cli/run_batch_lines.h"
#include "tools/cli/run_result.h"
#include "tools/cli/run_warm_sessions.h"

namespace sandbox::cli {
namespace {

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Where a snippet's "stdin" is put before its run: in its own /tmp, opened as the standard
// input and unlinked before the snippet's code starts.
std::string StdinPath() { return std::string(layout::kTmpDir) + "/.mcp-sandbox-stdin"; }

// The Python worker keeps fd 0 on /dev/null; this cell (run before the snippet, in the same
// worker) puts the stdin file there. It binds no name the snippet could see, and ends in a
// statement, so the worker prints nothing for it.
std::string PythonStdinCell() {
  return fmt::format(
      "import os as _sbx_os\n"
      "_sbx_fd = _sbx_os.open('{0}', _sbx_os.O_RDONLY)\n"
      "_sbx_os.dup2(_sbx_fd, 0)\n"
      "_sbx_os.close(_sbx_fd)\n"
      "_sbx_os.unlink('{0}')\n"
      "del _sbx_os, _sbx_fd\n",
      StdinPath());
}

// A shell command gets the file the same way, on its first line (so the line numbers its
// errors name stay the snippet's).
std::string ShellStdinPrefix() { return fmt::format("exec 0<{0} && rm -f {0}; ", StdinPath()); }

// Results held back behind an earlier snippet still running, at most (each up to twice
// SANDBOX_MAX_OUTPUT_BYTES of output).
constexpr size_t kMaxHeldResults = 256;

// The input's lines, handed to the workers one at a time; blank lines are skipped.
class LineSource {
 public:
  explicit LineSource(std::istream& in) : in_(in) {}
  // The next snippet line: its text, its 1-based line number and its 0-based position among
  // the snippet lines (the order of the output). False at the end of the input.
  bool Next(std::string& text, size_t& line, size_t& index) {
    std::lock_guard<std::mutex> lock(mutex_);
    while (std::getline(in_, text)) {
      ++line_;
      if (!text.empty() && text.back() == '\r') text.pop_back();
      if (text.find_first_not_of(" \t") == std::string::npos) continue;
      line = line_;
      index = index_++;
      return true;
    }
    return false;
  }

 private:
  std::mutex mutex_;
  std::istream& in_;
  size_t line_ = 0;
  size_t index_ = 0;
};

// Writes the result lines in the order of the input: a result waits for those before it.
class OrderedWriter {
 public:
  explicit OrderedWriter(std::FILE* out) : out_(out) {}
  // Blocks while `limit` results wait behind an earlier one still running (a snippet that
  // runs to its time-out while the others go on): what is held stays bounded. The earlier one
  // ends within its time-out, so this never waits for ever.
  void WaitForRoom(size_t limit) {
    std::unique_lock<std::mutex> lock(mutex_);
    room_.wait(lock, [&] { return waiting_.size() < limit; });
  }
  // False once the output cannot be written (its reader is gone: EPIPE, SIGPIPE ignored).
  bool Put(size_t index, std::string text) {
    std::lock_guard<std::mutex> lock(mutex_);
    waiting_.emplace(index, std::move(text));
    for (auto it = waiting_.begin(); it != waiting_.end() && it->first == next_;
         it = waiting_.erase(it), ++next_) {
      std::fwrite(it->second.data(), 1, it->second.size(), out_);
      std::fputc('\n', out_);
    }
    room_.notify_all();
    return std::fflush(out_) == 0 && std::ferror(out_) == 0;
  }

 private:
  std::mutex mutex_;
  std::condition_variable room_;
  std::FILE* out_;
  std::map<size_t, std::string> waiting_;
  size_t next_ = 0;
};

struct SnippetOutcome {
  std::string line;  // the result line
  bool ran = false;
  int exit_code = 0;
  bool timed_out = false;
  bool oom = false;
};

// The counts, and the progress a person watches on stderr.
class Progress {
 public:
  explicit Progress(bool tty) : tty_(tty) {}
  void Add(const SnippetOutcome& outcome) {
    std::lock_guard<std::mutex> lock(mutex_);
    ++summary_.snippets;
    if (!outcome.ran) {
      ++summary_.not_run;
    } else {
      ++summary_.ran;
      if (outcome.exit_code == 0) ++summary_.exit_zero;
      if (outcome.timed_out) ++summary_.timed_out;
      if (outcome.oom) ++summary_.oom;
    }
    // A terminal gets one line redrawn 10 times a second; a log a line every 2 seconds.
    auto interval = tty_ ? std::chrono::milliseconds(100) : std::chrono::milliseconds(2000);
    if (Clock::now() - last_print_ < interval) return;
    last_print_ = Clock::now();
    summary_.wall_s = SecondsSince(start_);
    std::fprintf(stderr, "%s%s%s", tty_ ? "\r\033[K" : "", Line().c_str(), tty_ ? "" : "\n");
  }
  BatchSummary Finish(bool interrupted) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (tty_) std::fprintf(stderr, "\r\033[K");
    summary_.wall_s = SecondsSince(start_);
    summary_.interrupted = interrupted;
    return summary_;
  }

 private:
  std::string Line() const {
    return fmt::format(
        "mcp-sandbox run --batch: {} done ({} exited 0, {} not run), {:.1f} per second",
        summary_.snippets, summary_.exit_zero, summary_.not_run,
        summary_.wall_s > 0 ? static_cast<double>(summary_.snippets) / summary_.wall_s : 0.0);
  }
  std::mutex mutex_;
  bool tty_;
  BatchSummary summary_;
  Clock::time_point start_ = Clock::now();
  Clock::time_point last_print_ = Clock::now();
};

// One snippet, start to teardown, in a session of its own: a warm one when its limits are the
// batch's.
SnippetOutcome RunSnippet(SessionManager& manager, WarmSessions& warm, const BatchSnippet& snippet,
                          CancelToken* cancel) {
  const auto start = Clock::now();
  auto not_run = [&](const std::string& message) {
    return SnippetOutcome{BatchErrorLine(snippet.id, snippet.line, message)};
  };
  RunRequest request;
  request.kind = snippet.kind;
  request.code = snippet.code;
  request.timeout_s = snippet.timeout_s.value_or(manager.config().exec_timeout_s);
  request.max_output_bytes = manager.config().max_output_bytes;
  if (snippet.stdin_text && snippet.kind == RunRequest::Kind::kShell) {
    request.code = ShellStdinPrefix() + request.code;
  }
  // Refused before a sandbox is started for it: the batch's flags are the maxima.
  const SessionConfig& config = manager.config();
  if (snippet.timeout_s && *snippet.timeout_s > config.exec_timeout_s) {
    return not_run(fmt::format("timeout_s {} is above the batch's --timeout of {} s",
                               *snippet.timeout_s, config.exec_timeout_s));
  }
  if (snippet.memory_bytes && *snippet.memory_bytes > config.limits.memory_bytes) {
    return not_run(fmt::format("memory {} is above the batch's --memory of {}",
                               FormatBytes(*snippet.memory_bytes),
                               FormatBytes(config.limits.memory_bytes)));
  }
  if (auto ok = manager.CheckRunRequest(request); !ok) return not_run(ok.error().message);

  std::optional<std::string> session_id;
  if (!snippet.memory_bytes) session_id = warm.Take();
  if (!session_id) {
    SessionOptions options;
    options.memory_bytes = snippet.memory_bytes;
    auto session = manager.Create(options);
    if (!session) return not_run("the sandbox did not start: " + session.error().message);
    session_id = session->id;
  }
  // Closed whatever happens below; torn down by the manager's reaper while the next snippet
  // starts (the manager's shutdown waits for the last ones).
  struct CloseAtEnd {
    SessionManager& manager;
    std::string id;
    ~CloseAtEnd() {
      (void)manager.Close(id, /*force=*/true, SessionManager::Teardown::kBackground);
    }
  } close_at_end{manager, *session_id};

  for (const auto& [path, content] : snippet.files) {
    if (auto written = manager.WriteFile(*session_id, path, content, /*overwrite=*/true);
        !written) {
      return not_run(fmt::format("files: {}: {}", path, written.error().message));
    }
  }
  if (snippet.stdin_text) {
    if (auto written = manager.WriteFile(*session_id, StdinPath(), *snippet.stdin_text, true);
        !written) {
      return not_run("stdin: " + written.error().message);
    }
    if (snippet.kind == RunRequest::Kind::kPython) {
      RunRequest setup;
      setup.code = PythonStdinCell();
      setup.timeout_s = request.timeout_s;
      auto set = manager.Run(*session_id, setup, {}, cancel);
      if (!set || set->exit_code != 0) {
        return not_run("stdin: could not open it in the sandbox: " +
                       (set ? set->stderr_text : set.error().message));
      }
    }
  }
  auto result = manager.Run(*session_id, std::move(request), {}, cancel);
  if (!result) return not_run(result.error().message);
  if (result->cancelled) return not_run("cancelled: the batch was interrupted");
  SnippetOutcome outcome;
  outcome.ran = true;
  outcome.exit_code = RunExitCode(*result, /*interrupted=*/false);
  outcome.timed_out = result->timed_out;
  outcome.oom = result->oom;
  nlohmann::json fields = RunResultJson(*result, outcome.exit_code);
  // What the snippet used, for graders that hold programs to a budget (CallUsage: the
  // sandbox's CPU seconds during the run, its memory high-water mark).
  fields["cpu_s"] = result->cpu_seconds;
  fields["memory_peak_bytes"] = result->memory_peak_bytes;
  outcome.line = BatchResultLine(snippet.id, snippet.line, fields, SecondsSince(start));
  return outcome;
}

}  // namespace

BatchSummary BatchRun::Run(std::istream& in, std::FILE* out) {
  LineSource source(in);
  OrderedWriter writer(out);
  Progress progress(options_.progress_tty);
  WarmSessions warm(manager_, options_.warm);
  auto work = [&] {
    std::string text;
    size_t line = 0;
    size_t index = 0;
    while (true) {
      writer.WaitForRoom(kMaxHeldResults);
      if (stopped_ || !source.Next(text, line, index)) {
        warm.Stop();  // nothing more to start sandboxes for
        break;
      }
      SnippetOutcome outcome;
      auto snippet = ParseBatchLine(text, line);
      if (!snippet) {
        outcome.line = BatchErrorLine(BatchLineId(text, line), line,
                                      fmt::format("line {}: {}", line, snippet.error().message));
      } else {
        CancelToken cancel;
        {
          std::lock_guard<std::mutex> lock(running_mutex_);
          if (stopped_) cancel.Cancel();
          running_.insert(&cancel);
        }
        outcome = RunSnippet(manager_, warm, *snippet, &cancel);
        std::lock_guard<std::mutex> lock(running_mutex_);
        running_.erase(&cancel);
      }
      progress.Add(outcome);
      if (!writer.Put(index, std::move(outcome.line))) {
        std::fprintf(stderr, "mcp-sandbox run --batch: the output cannot be written: %s\n",
                     std::strerror(errno));
        Stop();
      }
    }
  };
  std::vector<std::thread> workers;
  for (int i = 0; i < std::max(1, options_.parallel); ++i) workers.emplace_back(work);
  for (auto& worker : workers) worker.join();
  return progress.Finish(stopped_);
}

void BatchRun::Stop() {
  std::lock_guard<std::mutex> lock(running_mutex_);
  stopped_ = true;
  for (CancelToken* cancel : running_) cancel->Cancel();
}

std::string SummaryLine(const BatchSummary& summary) {
  size_t non_zero = summary.ran - summary.exit_zero;
  return fmt::format(
      "mcp-sandbox run --batch: ran {} of {} snippets ({} not run{}): {} exited 0, {} non-zero "
      "({} timed out, {} out of memory); {:.1f} s, {:.1f} per second",
      summary.ran, summary.snippets, summary.not_run, summary.interrupted ? ", interrupted" : "",
      summary.exit_zero, non_zero, summary.timed_out, summary.oom, summary.wall_s,
      summary.wall_s > 0 ? static_cast<double>(summary.snippets) / summary.wall_s : 0.0);
}

}  // namespace sandbox::cli
