// agent_bench: what the agent costs, measured through AgentClient against sandbox-init running on
// the host over a socketpair (no namespaces: the backends' benchmarks add their own costs).
// Prints a markdown table; tools/bench.d/agent_roundtrip.sh runs it.
//
//   agent_bench [--runs N] [--python PATH]
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "runtime/base/files.h"
#include "tests/support/bench_stats.h"
#include "tests/support/local_agent.h"
#include "tests/support/test_support.h"

namespace {

using Clock = sandbox::testing::BenchClock;
using sandbox::RunRequest;
using sandbox::testing::LocalAgent;
using sandbox::testing::Ms;
using sandbox::testing::Percentile;

// Pss of a process in kB, from /proc/<pid>/smaps_rollup; -1 when unreadable.
long PssKb(pid_t pid) {
  std::ifstream file("/proc/" + std::to_string(pid) + "/smaps_rollup");
  std::string key;
  long value = 0;
  std::string unit;
  while (file >> key) {
    if (key == "Pss:") {
      file >> value >> unit;
      return value;
    }
    std::getline(file, unit);
  }
  return -1;
}

// Wall time of `python -c code` as a new process, as a per-call interpreter would pay it.
double FreshProcessMs(const std::string& python, const std::string& code) {
  auto start = Clock::now();
  pid_t pid = fork();
  if (pid == 0) {
    execl(python.c_str(), python.c_str(), "-c", code.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return -1;
  return Ms(Clock::now() - start);
}

struct Row {
  std::string what;
  std::string figure;
  std::string target;
};

int Main(int argc, char** argv) {
  int runs = 500;
  std::string python = "/usr/bin/python3";
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--runs") == 0 && i + 1 < argc) {
      runs = std::max(10, std::atoi(argv[++i]));
    } else if (std::strcmp(argv[i], "--python") == 0 && i + 1 < argc) {
      python = argv[++i];
    } else {
      std::fprintf(stderr, "usage: agent_bench [--runs N] [--python PATH]\n");
      return 2;
    }
  }
  sandbox::testing::TempDir dir;
  sandbox::testing::LocalAgentOptions options;
  options.data_dir = dir.Join("data");
  options.tmp_dir = dir.Join("tmp");
  options.python = python;
  (void)sandbox::MakeDirs(options.data_dir);
  (void)sandbox::MakeDirs(options.tmp_dir);

  auto boot_start = Clock::now();
  auto started = LocalAgent::Start(options);
  if (!started) {
    std::fprintf(stderr, "agent_bench: %s\n", started.error().message.c_str());
    return 1;
  }
  double boot_ms = Ms(Clock::now() - boot_start);
  LocalAgent& agent = **started;
  auto& client = agent.client();
  std::vector<Row> rows;
  char buf[128];

  RunRequest print_one;
  print_one.code = "print(1)";
  for (int i = 0; i < 20; ++i) (void)client.Run(print_one);  // warm up
  std::vector<double> round_trips;
  for (int i = 0; i < runs; ++i) {
    auto start = Clock::now();
    auto result = client.Run(print_one);
    double ms = Ms(Clock::now() - start);
    if (!result || result->stdout_text != "1\n") {
      std::fprintf(stderr, "agent_bench: print(1) failed\n");
      return 1;
    }
    round_trips.push_back(ms);
  }
  // Idle: nothing running, the worker waiting for its next cell.
  long init_pss = PssKb(agent.pid());
  long worker_pss = PssKb(client.info().worker_pid);

  std::snprintf(buf, sizeof buf, "%.3f ms / %.3f ms", Percentile(round_trips, 0.5),
                Percentile(round_trips, 0.99));
  rows.push_back({"warm `print(1)` round trip, p50 / p99 (" + std::to_string(runs) + " runs)", buf,
                  "p50 ≤ 2 ms"});
  std::snprintf(buf, sizeof buf, "%.1f ms", boot_ms);
  rows.push_back({"init start → hello (Python worker ready)", buf, ""});

  RunRequest fresh = print_one;
  fresh.fresh = true;
  std::vector<double> fresh_runs;
  for (int i = 0; i < 10; ++i) {
    auto start = Clock::now();
    if (client.Run(fresh)) fresh_runs.push_back(Ms(Clock::now() - start));
  }
  std::snprintf(buf, sizeof buf, "%.1f ms", Percentile(fresh_runs, 0.5));
  rows.push_back({"`fresh: true` `print(1)`, p50 (new worker per call)", buf, ""});

  if (sandbox::testing::PythonHasModule(python, "pandas")) {
    const std::string cell = "import pandas as pd\npd.DataFrame({'a': [1, 2, 3]})['a'].sum()";
    RunRequest pandas;
    pandas.code = cell;
    auto first_start = Clock::now();
    (void)client.Run(pandas);
    double first_ms = Ms(Clock::now() - first_start);
    std::vector<double> warm;
    for (int i = 0; i < 20; ++i) {
      auto start = Clock::now();
      auto result = client.Run(pandas);
      if (result && result->stdout_text == "6\n") warm.push_back(Ms(Clock::now() - start));
    }
    std::vector<double> cold;
    for (int i = 0; i < 10; ++i) {
      double ms = FreshProcessMs(python, cell);
      if (ms >= 0) cold.push_back(ms);
    }
    double warm_ms = Percentile(warm, 0.5);
    double cold_ms = Percentile(cold, 0.5);
    std::snprintf(buf, sizeof buf, "%.1f ms", first_ms);
    rows.push_back({"pandas cell, first in the session (pays the import)", buf, ""});
    std::snprintf(buf, sizeof buf, "%.2f ms", warm_ms);
    rows.push_back({"pandas cell, second and later in the session, p50", buf, ""});
    std::snprintf(buf, sizeof buf, "%.1f ms", cold_ms);
    rows.push_back({"same cell as a fresh `python3 -c` per call, p50", buf, ""});
    std::snprintf(buf, sizeof buf, "%.0f×", warm_ms > 0 ? cold_ms / warm_ms : 0.0);
    rows.push_back({"speed-up of the warm session", buf, "≥ 10×"});
  } else {
    rows.push_back({"pandas cells", "n/a (no pandas for " + python + ")", "≥ 10×"});
  }

  std::snprintf(buf, sizeof buf, "%.1f MB + %.1f MB = %.1f MB",
                static_cast<double>(init_pss) / 1024, static_cast<double>(worker_pss) / 1024,
                static_cast<double>(init_pss + worker_pss) / 1024);
  rows.push_back({"idle PSS: sandbox-init + Python worker", buf, "≤ 20 MB"});

  std::printf("| agent (%s, on the host, no namespaces) | measured | target |\n", python.c_str());
  std::printf("|---|---|---|\n");
  for (const auto& row : rows) {
    std::printf("| %s | %s | %s |\n", row.what.c_str(), row.figure.c_str(), row.target.c_str());
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return Main(argc, argv); }
