// mcp-sandbox sessions ls|gc: the sandboxes recorded in the state dir (by every server using
// it), and the sweep of what crashed servers left behind.
#include <unistd.h>

#include <cstdio>
#include <iostream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "rootfs/store.h"
#include "runtime/base/logging.h"
#include "runtime/base/units.h"
#include "runtime/cgroup/cgroup_limits.h"
#include "runtime/docker/docker_backend.h"
#include "runtime/ns/namespace_backend.h"
#include "runtime/session/backend_factory.h"
#include "runtime/session/egress_bytes_file.h"
#include "runtime/session/egress_socket.h"
#include "tools/cli/args.h"
#include "tools/cli/commands.h"
#include "tools/cli/live_sandboxes.h"
#include "tools/cli/saved_sessions_cli.h"
#include "tools/cli/wiring.h"

namespace sandbox::cli {
namespace {

constexpr const char* kSessionsHelp = R"(usage: mcp-sandbox sessions ls [--json] [--state-dir DIR]
       mcp-sandbox sessions gc [--state-dir DIR]
       mcp-sandbox sessions rm ID... [--state-dir DIR]

ls  lists the namespace sandboxes recorded in the state dir: session id, host pid of its init,
    host uid, whether the sandbox and the server that started it are alive, and what a live
    one uses now: memory, CPU seconds and processes (its process tree in /proc), the bytes
    on its /mnt/data and /tmp (their tmpfs, through /proc/PID/root) and the bytes its egress
    proxy carried, both directions, as its server publishes them ("-" where the session has
    no egress or this user may not look). `mcp-sandbox top` shows the same, live.
gc  removes what crashed servers left: kills their sandboxes, removes cgroups, host-id claims
    and records, egress sockets older than an hour, egress byte counts no server holds, and (when a Docker daemon answers)
    containers labelled by a dead server.
    Sandboxes of live servers are never touched.
rm  deletes hibernated sessions (their saved files and Python state), which `ls` lists after
    the sandboxes; a server resumes a hibernated session at the next call naming it.

example:
  mcp-sandbox sessions gc
)";

std::string BytesColumn(const std::optional<uint64_t>& bytes) {
  return bytes ? FormatBytes(*bytes) : "-";
}

int List(const std::string& state_dir, bool json) {
  auto all = ReadLiveSandboxes(state_dir);
  if (json) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& sandbox : all) {
      const auto& record = sandbox.record;
      nlohmann::json entry = {
          {"session_id", record.session_id}, {"init_pid", record.init.pid},
          {"host_uid", record.host_uid},     {"alive", sandbox.alive},
          {"server_pid", record.server.pid}, {"server_alive", sandbox.server_alive}};
      if (sandbox.alive) {
        entry["usage"] = {{"memory_bytes", sandbox.process.memory_bytes},
                          {"cpu_seconds", sandbox.process.cpu_seconds},
                          {"pids", sandbox.process.pids}};
        if (sandbox.data_bytes) entry["usage"]["data_bytes"] = *sandbox.data_bytes;
        if (sandbox.tmp_bytes) entry["usage"]["tmp_bytes"] = *sandbox.tmp_bytes;
        if (sandbox.egress_bytes) entry["usage"]["egress_bytes"] = *sandbox.egress_bytes;
      }
      out.push_back(std::move(entry));
    }
    std::cout << nlohmann::json{{"state_dir", state_dir},
                                {"sessions", out},
                                {"hibernated", SavedSessionsJson(state_dir)}}
                     .dump()
              << "\n";
    return kExitOk;
  }
  if (all.empty()) {
    std::cout << "no sandboxes recorded in " << state_dir << "/sessions\n";
    PrintSavedSessions(state_dir);
    return kExitOk;
  }
  std::printf("%-18s %-9s %-11s %-6s %-10s %-8s %-5s %-10s %-10s %-10s %-11s %s\n", "SESSION",
              "INIT PID", "HOST UID", "ALIVE", "MEMORY", "CPU S", "PIDS", "DATA", "TMP", "EGRESS",
              "SERVER PID", "SERVER");
  for (const auto& sandbox : all) {
    const auto& record = sandbox.record;
    bool alive = sandbox.alive;
    std::printf("%-18s %-9d %-11u %-6s %-10s %-8s %-5s %-10s %-10s %-10s %-11d %s\n",
                record.session_id.c_str(), record.init.pid, record.host_uid, alive ? "yes" : "no",
                alive ? FormatBytes(sandbox.process.memory_bytes).c_str() : "-",
                alive ? fmt::format("{:.2f}", sandbox.process.cpu_seconds).c_str() : "-",
                alive ? std::to_string(sandbox.process.pids).c_str() : "-",
                BytesColumn(sandbox.data_bytes).c_str(), BytesColumn(sandbox.tmp_bytes).c_str(),
                BytesColumn(sandbox.egress_bytes).c_str(), record.server.pid,
                sandbox.server_alive ? "alive" : "gone (gc removes it)");
  }
  PrintSavedSessions(state_dir);
  return kExitOk;
}

int Collect(const std::string& state_dir) {
  // The cgroup parent of this state dir's servers: their leftovers, and nobody else's. A parent
  // of a state dir of its own goes too once empty (a crashed server could not remove it); a
  // live server of that state dir makes it again for its next session.
  NamespaceBackend::Options options;
  options.state_dir = state_dir;
  options.agent_dir = DefaultAgentDir();
  const std::string owner = CgroupOwnerFor(state_dir);
  options.remove_cgroup_parents = owner != kDefaultCgroupOwner;
  NamespaceBackend namespaces(std::move(options), CgroupManager::Detect(owner));
  auto swept = namespaces.SweepOrphans();
  if (!swept) {
    std::cerr << "mcp-sandbox sessions gc: " << swept.error().message << "\n";
    return kExitFailure;
  }
  std::cout << "namespace sandboxes removed: " << *swept << "\n";
  std::cout << "egress sockets removed: "
            << SweepEgressSockets(EgressSocketDir(state_dir), kStaleEgressSocketAge) << "\n";
  std::cout << "egress byte counts removed: " << SweepEgressBytesFiles(EgressBytesDir(state_dir))
            << "\n";
  if (auto docker = docker::DockerBackend::Connect(); docker) {
    auto containers = (*docker)->SweepOrphans();
    if (!containers) {
      std::cerr << "mcp-sandbox sessions gc: docker: " << containers.error().message << "\n";
      return kExitFailure;
    }
    std::cout << "docker containers removed: " << *containers << "\n";
  } else {
    std::cout << "docker: not reachable, nothing to sweep there\n";
  }
  return kExitOk;
}

}  // namespace

int SessionsCommand(const Argv& argv) {
  Args args("sessions", {"--state-dir"}, {"--json"});
  if (!args.Parse(argv)) return kExitUsage;
  if (args.Has("--help")) {
    std::cout << kSessionsHelp;
    return kExitOk;
  }
  if (args.positional().empty()) return args.UsageError("expects ls, gc or rm (see --help)");
  if (args.positional()[0] == "rm") {
    if (args.positional().size() < 2) return args.UsageError("rm expects session ids");
    std::string dir = args.GetOr("--state-dir", rootfs::ImageStore::DefaultStateDir());
    return RemoveSavedSessions(dir, {args.positional().begin() + 1, args.positional().end()});
  }
  if (args.positional().size() != 1) return args.UsageError("expects ls or gc (see --help)");
  std::string state_dir = args.GetOr("--state-dir", rootfs::ImageStore::DefaultStateDir());
  LogOptions log_options;
  log_options.level = "warn";
  (void)InitLogging(log_options);
  const std::string& verb = args.positional()[0];
  if (verb == "ls") return List(state_dir, args.Has("--json"));
  if (verb == "gc") return Collect(state_dir);
  return args.UsageError("unknown verb '" + verb + "' (expects ls or gc)");
}

}  // namespace sandbox::cli
