// ns_bench: how fast namespace sessions start and how little they cost. Prints markdown tables;
// tools/bench.d/session_create.sh runs it (next to `docker run --rm` of the same image).
//
//   ns_bench [--rootfs DIR] [--runs N] [--concurrent N] [--warm N] [--idle N] [--print-rootfs]
//            [--compiling-row] [--verbose]
//
// Rows: create + agent hello + print(1) through AgentClient (p50/p99 over --runs sequential
// sessions, with the phases), with --compiling-row the same with the worker compiling worker.py at
// its start (the path before `serve` kept the worker's byte code per image; --runs sessions more,
// in turn with the others), warm print(1),
// --concurrent sessions created at once (wall time until every one has answered print(1)), the idle
// PSS of one session's processes, --idle sessions side by side (all answering; their PSS and the
// MemAvailable they take), and what the kernel charges for each namespace kind (unshare in a
// throwaway child).
//
// The sandboxes start the way `serve` starts its own: on the agent dir with the worker's byte code
// kept for the image, made and looked up by serve's own code (UseKeptWorkerByteCode and the
// config's agent_dir_for, tools/cli/run_agent_cache.h), in a state dir of the bench's. Where it
// cannot be kept, they start as serve's would then, compiling worker.py, and the output says so.
#include <fcntl.h>
#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <barrier>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include <spdlog/spdlog.h>

#include "rootfs/store.h"
#include "runtime/agent/host/agent_client.h"
#include "runtime/agent/host/agent_dir.h"
#include "runtime/base/files.h"
#include "runtime/cgroup/cgroup_limits.h"
#include "runtime/ns/namespace_backend.h"
#include "runtime/ns/process_identity.h"
#include "tests/support/bench_stats.h"
#include "tests/support/test_support.h"
#include "tools/cli/run_agent_cache.h"

namespace {

using namespace sandbox;
using Clock = sandbox::testing::BenchClock;
using sandbox::testing::Ms;
using sandbox::testing::Percentile;

std::string FindRootfs() {
  if (const char* env = std::getenv("SANDBOX_BENCH_ROOTFS"); env != nullptr && *env) return env;
  for (const std::string& state :
       {rootfs::ImageStore::DefaultStateDir(), std::string("/var/lib/mcp-sandbox")}) {
    rootfs::ImageStore store(state);
    for (const char* name : {"python-small", "python"}) {
      if (auto image = store.Find(name)) return image->rootfs;
    }
  }
  if (::access("/var/tmp/ns-rootfs/usr/bin/python3", X_OK) == 0) return "/var/tmp/ns-rootfs";
  return "";
}

std::string NewId(int n) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "sess_%04x%08x", ::getpid() & 0xffff, static_cast<unsigned>(n));
  return buf;
}

SandboxSpec Spec(const std::string& rootfs, const std::string& agent, int n) {
  SandboxSpec spec;
  spec.session_id = NewId(n);
  spec.image_name = "bench";
  spec.rootfs = rootfs;
  spec.agent_dir = agent;
  spec.env = {"PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8"};
  return spec;  // default Limits: 512 MiB, 1 cpu, 256 pids (as `docker run` gets them)
}

// The agent dir `serve` starts a sandbox of the bench's image on: its kept copy with the
// worker's byte code, looked up per start as serve's SandboxStarter does.
struct AgentDirs {
  std::string plain;         // sandbox-init and worker.py: the worker compiles worker.py
  SessionConfig serve_like;  // agent_dir_for set by UseKeptWorkerByteCode
  ResolvedImage image;

  std::string ForStart() const {
    std::string kept = serve_like.agent_dir_for ? serve_like.agent_dir_for(image) : "";
    return kept.empty() ? plain : kept;
  }
};

struct Timed {
  double start = 0, hello = 0, first_run = 0, destroy = 0;
  bool ok = false;
  std::string error;
};

// create -> hello -> print(1) -> destroy, timed; the agent dir chosen in the start's time, as
// serve chooses it.
Timed OneSession(NamespaceBackend& backend, SandboxSpec spec,
                 const std::function<std::string()>& agent_dir) {
  Timed t;
  auto t0 = Clock::now();
  spec.agent_dir = agent_dir();
  auto sandbox = backend.Start(spec);
  if (!sandbox) {
    t.error = sandbox.error().message;
    return t;
  }
  auto t1 = Clock::now();
  AgentClient client((*sandbox)->stream());
  if (auto ready = client.WaitReady(std::chrono::seconds(30)); !ready) {
    t.error = ready.error().message;
    return t;
  }
  auto t2 = Clock::now();
  RunRequest request;
  request.code = "print(1)";
  auto result = client.Run(request);
  auto t3 = Clock::now();
  if (!result || result->stdout_text != "1\n") {
    t.error = result ? "unexpected output: " + result->stdout_text : result.error().message;
    return t;
  }
  sandbox->reset();
  auto t4 = Clock::now();
  t = {Ms(t1 - t0), Ms(t2 - t1), Ms(t3 - t2), Ms(t4 - t3), true, ""};
  return t;
}

// Sum of Pss over the process tree of `init` (needs root, or the same user).
double TreePssMiB(pid_t init) {
  uint64_t kib = 0;
  std::vector<pid_t> pending = {init};
  while (!pending.empty()) {
    pid_t pid = pending.back();
    pending.pop_back();
    auto rollup = ReadFile("/proc/" + std::to_string(pid) + "/smaps_rollup");
    if (rollup) {
      size_t at = rollup->find("\nPss:");
      if (at != std::string::npos) kib += std::strtoull(rollup->c_str() + at + 5, nullptr, 10);
    }
    std::string out;
    testing::RunShell("cat /proc/" + std::to_string(pid) + "/task/*/children 2>/dev/null", &out);
    for (char* p = out.data(); *p;) {
      char* end = nullptr;
      long child = std::strtol(p, &end, 10);
      if (end == p) break;
      pending.push_back(static_cast<pid_t>(child));
      p = end;
    }
  }
  return static_cast<double>(kib) / 1024.0;
}

// MemAvailable from /proc/meminfo, in MiB.
double MemAvailableMiB() {
  auto meminfo = ReadFile("/proc/meminfo");
  if (!meminfo) return 0;
  size_t at = meminfo->find("MemAvailable:");
  if (at == std::string::npos) return 0;
  return static_cast<double>(std::strtoull(meminfo->c_str() + at + 13, nullptr, 10)) / 1024.0;
}

struct IdleFigures {
  int ok = 0;
  double pss_mib = 0;
  double available_drop_mib = 0;
};

IdleFigures MeasureIdleSessions(NamespaceBackend& backend, const std::string& rootfs,
                                const std::string& agent, int count) {
  IdleFigures figures;
  if (count <= 0) return figures;
  double available_before = MemAvailableMiB();
  std::vector<std::unique_ptr<Sandbox>> sessions;
  RunRequest request;
  request.code = "print(1)";
  for (int i = 0; i < count; ++i) {
    auto sandbox = backend.Start(Spec(rootfs, agent, 4000000 + i));
    if (!sandbox) {
      std::fprintf(stderr, "\nidle session %d: %s\n", i, sandbox.error().message.c_str());
      break;
    }
    AgentClient client((*sandbox)->stream());
    if (client.WaitReady(std::chrono::seconds(30)) && client.Run(request)) ++figures.ok;
    sessions.push_back(std::move(*sandbox));
    std::fprintf(stderr, "\ridle %d/%d", i + 1, count);
  }
  std::fprintf(stderr, "\n");
  std::this_thread::sleep_for(std::chrono::seconds(1));
  figures.available_drop_mib = available_before - MemAvailableMiB();
  for (auto& sandbox : sessions) {
    figures.pss_mib += TreePssMiB(static_cast<NamespaceSandbox&>(*sandbox).init_pid());
  }
  return figures;
}

// The cost of unshare(flags) in a child already in its own user namespace (as sandboxes are),
// p50 over `runs`; each iteration replaces the previous namespace, which the kernel tears down
// (network namespaces asynchronously, in its cleanup_net worker).
double UnshareCostUs(int flags, int runs) {
  int pipefd[2];
  if (::pipe2(pipefd, O_CLOEXEC) != 0) return -1;
  pid_t pid = ::fork();
  if (pid == 0) {
    ::close(pipefd[0]);
    if (::unshare(CLONE_NEWUSER) != 0) ::_exit(1);
    std::vector<double> us;
    for (int i = 0; i < runs; ++i) {
      auto t0 = Clock::now();
      if (::unshare(flags) != 0) ::_exit(2);
      us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
    }
    double p50 = Percentile(us, 0.5);
    (void)!::write(pipefd[1], &p50, sizeof p50);
    ::_exit(0);
  }
  ::close(pipefd[1]);
  double p50 = -1;
  if (::read(pipefd[0], &p50, sizeof p50) != sizeof p50) p50 = -1;
  ::close(pipefd[0]);
  ::waitpid(pid, nullptr, 0);
  return p50;
}

}  // namespace

int main(int argc, char** argv) {
  std::string rootfs;
  int runs = 100, concurrent = 20, warm_runs = 200, idle = 200;
  bool print_rootfs = false;
  bool verbose = false;
  bool compiling_row = false;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto next = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (arg == "--rootfs")
      rootfs = next();
    else if (arg == "--runs")
      runs = std::atoi(next().c_str());
    else if (arg == "--concurrent")
      concurrent = std::atoi(next().c_str());
    else if (arg == "--idle")
      idle = std::atoi(next().c_str());
    else if (arg == "--warm")
      warm_runs = std::atoi(next().c_str());
    else if (arg == "--print-rootfs")
      print_rootfs = true;
    else if (arg == "--compiling-row")
      compiling_row = true;
    else if (arg == "--verbose")
      verbose = true;
    else {
      std::fprintf(stderr,
                   "usage: ns_bench [--rootfs DIR] [--runs N] [--concurrent N] "
                   "[--warm N] [--idle N] [--print-rootfs] [--compiling-row] [--verbose]\n");
      return 2;
    }
  }
  spdlog::set_level(verbose ? spdlog::level::debug : spdlog::level::warn);
  if (rootfs.empty()) rootfs = FindRootfs();
  if (print_rootfs) {
    std::printf("%s\n", rootfs.c_str());
    return rootfs.empty() ? 1 : 0;
  }
  if (rootfs.empty()) {
    std::printf(
        "n/a: no image rootfs (run `mcp-sandbox image build`, or set SANDBOX_BENCH_ROOTFS)\n");
    return 0;
  }
  auto agent = FindAgentDir();
  if (!agent) {
    std::printf("n/a: %s\n", agent.error().message.c_str());
    return 0;
  }
  testing::TempDir tmp;
  auto cgroups = CgroupManager::Detect("mcp-sandbox-bench");
  std::vector<std::string> cgroup_parents = cgroups->parent_dirs();  // removed at the end
  auto backend_ptr =
      std::make_shared<NamespaceBackend>(tmp.Join("state"), *agent, std::move(cgroups));
  NamespaceBackend& backend = *backend_ptr;
  EnforcedLimits limits = backend.PlanLimits(Limits{});
  std::string cgroup_reason = backend.cgroups().reason();

  // serve's kept byte code for the bench's image: compiled now in a sandbox of the image by
  // serve's own code, then looked up per start (UseKeptWorkerByteCode).
  AgentDirs dirs;
  dirs.plain = *agent;
  dirs.image.name = "bench";
  dirs.image.rootfs = rootfs;
  dirs.serve_like.state_dir = tmp.Join("state");
  dirs.serve_like.agent_dir = *agent;
  dirs.serve_like.default_image = dirs.image.name;
  ImageResolver resolver = [&dirs](const std::string&) -> Result<ResolvedImage> {
    return dirs.image;
  };
  cli::UseKeptWorkerByteCode(dirs.serve_like, backend_ptr, resolver);
  const std::string kept_dir = dirs.ForStart();
  const bool byte_code_kept = kept_dir != dirs.plain;
  auto serve_agent_dir = [&dirs] { return dirs.ForStart(); };
  auto compiling_agent_dir = [&dirs] { return dirs.plain; };

  // Warm-up (page cache, the BPF program, python's .pyc files).
  for (int i = 0; i < 3; ++i) {
    OneSession(backend, Spec(rootfs, *agent, 1000000 + i), serve_agent_dir);
    if (compiling_row) OneSession(backend, Spec(rootfs, *agent, 1100000 + i), compiling_agent_dir);
  }

  // serve's path and the worker compiling worker.py, in turn (each first every other time), so
  // that both see the same load.
  struct Phases {
    std::vector<double> total, start, hello, first, destroy;
  } kept, compiling;
  for (int i = 0; i < runs; ++i) {
    for (int turn = 0; turn < (compiling_row ? 2 : 1); ++turn) {
      const bool serve_path = !compiling_row || (turn == 0) == (i % 2 == 0);
      Timed t = serve_path
                    ? OneSession(backend, Spec(rootfs, *agent, i), serve_agent_dir)
                    : OneSession(backend, Spec(rootfs, *agent, 1200000 + i), compiling_agent_dir);
      if (!t.ok) {
        std::fprintf(stderr, "session %d failed: %s\n", i, t.error.c_str());
        return 1;
      }
      Phases& phases = serve_path ? kept : compiling;
      phases.total.push_back(t.start + t.hello + t.first_run);
      phases.start.push_back(t.start);
      phases.hello.push_back(t.hello);
      phases.first.push_back(t.first_run);
      phases.destroy.push_back(t.destroy);
    }
    std::fprintf(stderr, "\rsequential %d/%d", i + 1, runs);
  }
  std::fprintf(stderr, "\n");

  // Warm print(1) and idle PSS in one long-lived session.
  std::vector<double> warm;
  double pss = 0;
  {
    auto sandbox = backend.Start(Spec(rootfs, dirs.ForStart(), 2000000));
    if (!sandbox) return 1;
    AgentClient client((*sandbox)->stream());
    if (!client.WaitReady(std::chrono::seconds(30))) return 1;
    RunRequest request;
    request.code = "print(1)";
    for (int i = 0; i < warm_runs; ++i) {
      auto t0 = Clock::now();
      auto result = client.Run(request);
      if (!result) return 1;
      warm.push_back(Ms(Clock::now() - t0));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    pss = TreePssMiB(static_cast<NamespaceSandbox&>(**sandbox).init_pid());
  }

  // N sessions at once: wall time from the go until every one answered print(1).
  std::vector<Timed> results(static_cast<size_t>(concurrent));
  std::vector<double> ready_at(static_cast<size_t>(concurrent));
  std::barrier sync(concurrent + 1);
  Clock::time_point go;
  std::vector<std::thread> threads;
  std::vector<std::unique_ptr<Sandbox>> keep(static_cast<size_t>(concurrent));
  for (int i = 0; i < concurrent; ++i) {
    threads.emplace_back([&, i] {
      sync.arrive_and_wait();
      auto sandbox = backend.Start(Spec(rootfs, dirs.ForStart(), 3000000 + i));
      if (!sandbox) {
        results[i].error = sandbox.error().message;
        return;
      }
      AgentClient client((*sandbox)->stream());
      RunRequest request;
      request.code = "print(1)";
      if (client.WaitReady(std::chrono::seconds(30)) && client.Run(request)) {
        results[i].ok = true;
        ready_at[i] = Ms(Clock::now() - go);
      }
      keep[i] = std::move(*sandbox);  // torn down after the measurement
    });
  }
  go = Clock::now();
  sync.arrive_and_wait();
  for (auto& t : threads) t.join();
  double wall = Ms(Clock::now() - go);
  int ok = 0;
  for (auto& r : results) ok += r.ok ? 1 : 0;
  auto t_teardown = Clock::now();
  keep.clear();
  double teardown = Ms(Clock::now() - t_teardown);

  // N idle sessions side by side: every one answers, what they cost together (their PSS, and
  // how much MemAvailable drops, which also counts the kernel's share: page tables, namespaces,
  // cgroups, tmpfs metadata), and how many of them 24 GiB would hold at that rate.
  IdleFigures idle_figures = MeasureIdleSessions(backend, rootfs, dirs.ForStart(), idle);

  double netns = UnshareCostUs(CLONE_NEWNET, 50);
  double mntns = UnshareCostUs(CLONE_NEWNS, 50);
  double small = UnshareCostUs(CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWCGROUP, 50);

  std::printf("namespace backend, image rootfs %s, cgroup mode %s (%s), %s server, %ld cpus\n\n",
              rootfs.c_str(), limits.cgroup_mode.c_str(), cgroup_reason.c_str(),
              ::geteuid() == 0 ? "root" : "unprivileged", ::sysconf(_SC_NPROCESSORS_ONLN));
  if (byte_code_kept) {
    std::printf("the worker's byte code kept by serve's code in %s\n\n", kept_dir.c_str());
  } else {
    std::printf(
        "the worker's byte code could not be kept (--verbose says why): the sandboxes compile "
        "worker.py, as serve's would here\n\n");
  }
  std::printf("| measure | p50 | p99 | runs |\n|---|---|---|---|\n");
  auto print_phases = [runs](const Phases& phases) {
    std::printf("| &nbsp;&nbsp;start (clone .. execve of init) | %.1f ms | %.1f ms | %d |\n",
                Percentile(phases.start, 0.5), Percentile(phases.start, 0.99), runs);
    std::printf("| &nbsp;&nbsp;agent hello (init + python worker up) | %.1f ms | %.1f ms | %d |\n",
                Percentile(phases.hello, 0.5), Percentile(phases.hello, 0.99), runs);
    std::printf("| &nbsp;&nbsp;first print(1) | %.2f ms | %.2f ms | %d |\n",
                Percentile(phases.first, 0.5), Percentile(phases.first, 0.99), runs);
    std::printf("| &nbsp;&nbsp;destroy (kill, reap, cgroup, record) | %.1f ms | %.1f ms | %d |\n",
                Percentile(phases.destroy, 0.5), Percentile(phases.destroy, 0.99), runs);
  };
  std::printf("| create + hello + print(1) | %.1f ms | %.1f ms | %d |\n",
              Percentile(kept.total, 0.5), Percentile(kept.total, 0.99), runs);
  print_phases(kept);
  if (compiling_row) {
    std::printf(
        "| create + hello + print(1), the worker compiling worker.py (before serve kept its byte "
        "code) | %.1f ms | %.1f ms | %d |\n",
        Percentile(compiling.total, 0.5), Percentile(compiling.total, 0.99), runs);
    print_phases(compiling);
  }
  std::printf("| warm print(1) round trip | %.2f ms | %.2f ms | %d |\n", Percentile(warm, 0.5),
              Percentile(warm, 0.99), warm_runs);
  std::printf(
      "| %d sessions created at once, all answered print(1) | %.0f ms (wall) | "
      "slowest %.0f ms | %d/%d ok |\n",
      concurrent, wall, *std::max_element(ready_at.begin(), ready_at.end()), ok, concurrent);
  std::printf("| teardown of those %d | %.0f ms | | |\n", concurrent, teardown);
  std::printf("| idle session PSS (init + worker) | %.1f MiB | | 1 |\n", pss);
  if (idle > 0) {
    std::printf("| %d idle sessions, all answered print(1) | %d/%d ok | | |\n", idle,
                idle_figures.ok, idle);
    std::printf("| &nbsp;&nbsp;their PSS together (per session) | %.0f MiB (%.1f MiB) | | |\n",
                idle_figures.pss_mib, idle_figures.pss_mib / idle);
    std::printf(
        "| &nbsp;&nbsp;MemAvailable drop, kernel included (per session) | %.0f MiB (%.1f MiB) | "
        "| |\n",
        idle_figures.available_drop_mib, idle_figures.available_drop_mib / idle);
    std::printf("| &nbsp;&nbsp;sessions 24 GiB holds at that rate | %.0f | | |\n",
                idle_figures.available_drop_mib > 0
                    ? 24.0 * 1024 / (idle_figures.available_drop_mib / idle)
                    : 0.0);
  }
  std::printf(
      "\nnamespace creation cost (unshare in a user namespace, p50 of 50; the previous one "
      "is torn down each time):\n\n");
  std::printf("| namespaces | p50 |\n|---|---|\n");
  std::printf("| net | %.0f us |\n| mount | %.0f us |\n| ipc + uts + cgroup | %.0f us |\n", netns,
              mntns, small);
  backend_ptr.reset();
  for (const std::string& dir : cgroup_parents) ::rmdir(dir.c_str());
  return ok == concurrent && idle_figures.ok == idle ? 0 : 1;
}
