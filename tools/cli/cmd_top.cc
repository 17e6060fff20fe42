// mcp-sandbox top: a live view of the namespace sandboxes recorded in the state dir, what
// `sessions ls` reads (live_sandboxes.h) sampled every interval: CPU % (the CPU seconds between
// two samples over the time between them), memory, processes, disk and egress. One frame and
// out with --once or when stdout is no terminal, for scripts and tests.
#include <poll.h>
#include <termios.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <ctime>
#include <iostream>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "rootfs/store.h"
#include "runtime/base/logging.h"
#include "runtime/base/units.h"
#include "tools/cli/args.h"
#include "tools/cli/commands.h"
#include "tools/cli/live_sandboxes.h"

namespace sandbox::cli {
namespace {

constexpr const char* kTopHelp =
    R"(usage: mcp-sandbox top [--once] [--interval SECONDS] [--state-dir DIR]

A live view of the namespace sandboxes recorded in the state dir (what `sessions ls` lists),
refreshed every interval (1 s): CPU % over the interval (100 % is one core), memory, processes,
the bytes on /mnt/data and /tmp, and the bytes their egress proxy carried ("-": no egress, or
not this user's to see). Busiest first. q or Ctrl-C quits.

--once         print one frame (CPU % measured over one interval) and exit; also what happens
               when stdout is not a terminal
--interval S   seconds between frames, 0.1 to 60 (1)

example:
  mcp-sandbox top
  mcp-sandbox top --once --interval 0.5 | head
)";

using Clock = std::chrono::steady_clock;

struct Sample {
  Clock::time_point when;
  std::vector<LiveSandbox> sandboxes;
};

Sample TakeSample(const std::string& state_dir) {
  return {.when = Clock::now(), .sandboxes = ReadLiveSandboxes(state_dir)};
}

std::string Bytes(const std::optional<uint64_t>& bytes) {
  return bytes ? FormatBytes(*bytes) : "-";
}

// The frame for `now`, with CPU % from the same sandboxes in `before`.
std::string RenderFrame(const std::string& state_dir, const Sample& before, const Sample& now) {
  std::map<std::string, double> cpu_before;
  for (const auto& sandbox : before.sandboxes) {
    if (sandbox.alive) cpu_before[sandbox.record.session_id] = sandbox.process.cpu_seconds;
  }
  double seconds = std::chrono::duration<double>(now.when - before.when).count();
  struct Row {
    const LiveSandbox* sandbox;
    std::optional<double> cpu_percent;  // nullopt: not in the previous sample
  };
  std::vector<Row> rows;
  size_t gone = 0;
  for (const auto& sandbox : now.sandboxes) {
    if (!sandbox.alive) {
      ++gone;
      continue;
    }
    Row row{.sandbox = &sandbox, .cpu_percent = std::nullopt};
    if (auto it = cpu_before.find(sandbox.record.session_id);
        it != cpu_before.end() && seconds > 0) {
      row.cpu_percent = std::max(0.0, sandbox.process.cpu_seconds - it->second) / seconds * 100;
    }
    rows.push_back(row);
  }
  std::sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) {
    double ca = a.cpu_percent.value_or(-1);
    double cb = b.cpu_percent.value_or(-1);
    if (ca != cb) return ca > cb;
    return a.sandbox->process.memory_bytes > b.sandbox->process.memory_bytes;
  });
  uint64_t memory = 0;
  double cpu = 0;
  for (const Row& row : rows) {
    memory += row.sandbox->process.memory_bytes;
    cpu += row.cpu_percent.value_or(0);
  }
  std::time_t wall = std::time(nullptr);
  char clock[16];
  std::strftime(clock, sizeof clock, "%H:%M:%S", std::localtime(&wall));
  std::string frame = fmt::format(
      "mcp-sandbox top - {}  {} live sandboxes ({} recorded, not running)  CPU {:.1f} %  "
      "memory {}\nstate dir {}\n\n",
      clock, rows.size(), gone, cpu, FormatBytes(memory), state_dir);
  frame += fmt::format("{:<34} {:>7} {:>10} {:>5} {:>10} {:>10} {:>10} {:>9}\n", "SESSION", "CPU %",
                       "MEMORY", "PIDS", "DATA", "TMP", "EGRESS", "SERVER");
  for (const Row& row : rows) {
    const LiveSandbox& sandbox = *row.sandbox;
    frame += fmt::format(
        "{:<34} {:>7} {:>10} {:>5} {:>10} {:>10} {:>10} {:>9}\n", sandbox.record.session_id,
        row.cpu_percent ? fmt::format("{:.1f}", *row.cpu_percent) : std::string("-"),
        FormatBytes(sandbox.process.memory_bytes), sandbox.process.pids, Bytes(sandbox.data_bytes),
        Bytes(sandbox.tmp_bytes), Bytes(sandbox.egress_bytes),
        sandbox.server_alive ? "alive" : "gone");
  }
  if (rows.empty()) frame += "(no live sandboxes)\n";
  return frame;
}

std::atomic<bool> interrupt_seen{false};
extern "C" void OnInterrupt(int) { interrupt_seen = true; }

// Raw keys (no echo, no line buffering) on a terminal stdin while the view runs.
class RawKeys {
 public:
  RawKeys() {
    if (::isatty(STDIN_FILENO) == 0 || ::tcgetattr(STDIN_FILENO, &saved_) != 0) return;
    struct termios raw = saved_;
    raw.c_lflag &= ~static_cast<tcflag_t>(ICANON | ECHO);
    raw.c_cc[VMIN] = 0;
    raw.c_cc[VTIME] = 0;
    active_ = ::tcsetattr(STDIN_FILENO, TCSANOW, &raw) == 0;
  }
  ~RawKeys() {
    if (active_) (void)::tcsetattr(STDIN_FILENO, TCSANOW, &saved_);
  }
  RawKeys(const RawKeys&) = delete;
  RawKeys& operator=(const RawKeys&) = delete;

  // Waits up to `timeout` for a key; true when it was q (or stdin ended).
  bool WaitForQuit(std::chrono::milliseconds timeout) const {
    auto deadline = Clock::now() + timeout;
    while (!interrupt_seen) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
      if (left.count() <= 0) return false;
      struct pollfd in = {STDIN_FILENO, POLLIN, 0};
      int ready = ::poll(&in, active_ ? 1 : 0, static_cast<int>(left.count()));
      if (ready <= 0) continue;  // timeout (checked above) or a signal
      char key = 0;
      ssize_t n = ::read(STDIN_FILENO, &key, 1);
      if (n == 0) return false;  // stdin closed: Ctrl-C still quits
      if (n == 1 && (key == 'q' || key == 'Q')) return true;
    }
    return true;
  }

 private:
  struct termios saved_ = {};
  bool active_ = false;
};

int Live(const std::string& state_dir, std::chrono::milliseconds interval) {
  struct sigaction action = {};
  action.sa_handler = OnInterrupt;  // no SA_RESTART: poll returns on the signal
  ::sigaction(SIGINT, &action, nullptr);
  ::sigaction(SIGTERM, &action, nullptr);
  RawKeys keys;
  std::fputs("\x1b[?1049h\x1b[?25l", stdout);  // the alternate screen, no cursor
  Sample before = TakeSample(state_dir);
  std::fputs("\x1b[H\x1b[2Jmeasuring...\n", stdout);
  std::fflush(stdout);
  bool quit = keys.WaitForQuit(interval);
  while (!quit) {
    Sample now = TakeSample(state_dir);
    std::string frame = RenderFrame(state_dir, before, now);
    std::fputs("\x1b[H\x1b[2J", stdout);
    std::fputs(frame.c_str(), stdout);
    std::fputs("\n(q to quit)", stdout);
    std::fflush(stdout);
    before = std::move(now);
    quit = keys.WaitForQuit(interval);
  }
  std::fputs("\x1b[?25h\x1b[?1049l", stdout);
  std::fflush(stdout);
  return kExitOk;
}

}  // namespace

int TopCommand(const Argv& argv) {
  Args args("top", {"--state-dir", "--interval"}, {"--once"});
  if (!args.Parse(argv)) return kExitUsage;
  if (args.Has("--help")) {
    std::cout << kTopHelp;
    return kExitOk;
  }
  if (!args.positional().empty()) return args.UsageError("takes no arguments (see --help)");
  double interval_s = 1;
  if (auto text = args.Get("--interval")) {
    try {
      size_t used = 0;
      interval_s = std::stod(*text, &used);
      if (used != text->size()) throw std::invalid_argument(*text);
    } catch (const std::exception&) {
      return args.UsageError("--interval expects seconds, e.g. 0.5, not '" + *text + "'");
    }
    if (!(interval_s >= 0.1 && interval_s <= 60)) {
      return args.UsageError("--interval must be between 0.1 and 60 seconds");
    }
  }
  auto interval = std::chrono::milliseconds(static_cast<int64_t>(interval_s * 1000));
  std::string state_dir = args.GetOr("--state-dir", rootfs::ImageStore::DefaultStateDir());
  LogOptions log_options;
  log_options.level = "warn";
  (void)InitLogging(log_options);
  if (!args.Has("--once") && ::isatty(STDOUT_FILENO) != 0) return Live(state_dir, interval);
  Sample before = TakeSample(state_dir);
  std::this_thread::sleep_for(interval);
  std::cout << RenderFrame(state_dir, before, TakeSample(state_dir)) << std::flush;
  return kExitOk;
}

}  // namespace sandbox::cli
