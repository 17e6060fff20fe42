// docker_bench: the Docker backend side by side with the namespace backend (when built and a
// rootfs is given) and the per-call approach of the Docker-based server this replaces (a
// `docker exec ... python3 -c CODE` for every call, through the Engine API as its SDK did, and
// through the docker CLI). Same machine, same image, one run. Prints a markdown table of
// medians; tools/bench.d/docker_backend.sh runs it.
//
//   docker_bench [--runs N] [--warm N] [--image IMAGE] [--archive TAR] [--rootfs DIR] [--verbose]
//
// --archive loads the image from a docker-save/OCI archive when the daemon lacks it; --rootfs is
// the same image unpacked, for the namespace backend (its row is n/a without it).
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "runtime/agent/host/agent_client.h"
#include "runtime/agent/host/agent_dir.h"
#include "runtime/base/files.h"
#include "runtime/cgroup/cgroup_limits.h"
#include "runtime/docker/container_spec.h"
#include "runtime/docker/docker_backend.h"
#include "runtime/docker/unix_http.h"
#include "runtime/ns/namespace_backend.h"
#include "tests/support/bench_stats.h"
#include "tests/support/test_support.h"

namespace {

using Clock = sandbox::testing::BenchClock;
using sandbox::testing::Ms;
using sandbox::testing::Percentile;
using namespace sandbox;

struct Row {
  std::string approach;
  std::vector<double> cold;  // create + first print(1)
  std::vector<double> warm;  // print(1) in a running sandbox
  std::string note;
};

std::string Cell(const std::vector<double>& values, double p) {
  return values.empty() ? "n/a" : fmt::format("{:.1f}", Percentile(values, p));
}

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "docker_bench: %s\n", what.c_str());
  std::exit(1);
}

RunRequest PrintOne() {
  RunRequest request;
  request.code = "print(1)";
  request.timeout_s = 60;
  return request;
}

std::string SessionId(int i) { return fmt::format("sess_b{:05x}{:06x}", getpid() & 0xfffff, i); }

// Cold: Start + agent hello + print(1); warm: print(1) round trips in one sandbox.
void MeasureBackend(Backend& backend, const std::function<SandboxSpec(int)>& spec_for, int runs,
                    int warm_runs, Row& row) {
  for (int i = 0; i <= runs; ++i) {
    SandboxSpec spec = spec_for(i);
    auto t0 = Clock::now();
    auto sandbox = backend.Start(spec);
    if (!sandbox) Die("start: " + sandbox.error().message);
    AgentClient client((*sandbox)->stream());
    if (auto ready = client.WaitReady(std::chrono::seconds(60)); !ready) {
      Die("agent hello: " + ready.error().message);
    }
    auto result = client.Run(PrintOne());
    if (!result || result->stdout_text != "1\n") Die("print(1) failed");
    if (i > 0) row.cold.push_back(Ms(Clock::now() - t0));  // the first run warms caches
    if (i == runs) {
      for (int w = 0; w < warm_runs; ++w) {
        auto t = Clock::now();
        auto warm = client.Run(PrintOne());
        if (!warm || warm->stdout_text != "1\n") Die("warm print(1) failed");
        row.warm.push_back(Ms(Clock::now() - t));
      }
    }
  }
}

// The replaced server's way: a long-lived container, and for every call an exec of
// `python3 -c CODE` (exec create, start and wait for its stream, inspect for the exit code).
class ExecPerCall {
 public:
  ExecPerCall(const docker::DockerBackend& backend, std::string socket)
      : engine_(backend.engine()), http_(std::move(socket)) {}

  // Create + start a container idling in `sleep infinity` with the same hardening.
  std::string Create(const SandboxSpec& spec, const std::string& image,
                     const docker::ContainerOwner& owner) {
    auto container = docker::ContainerSpecFor(spec, image, owner, "");
    if (!container) Die(container.error().message);
    container->command = {"/bin/sleep", "infinity"};
    container->binds.clear();
    auto created =
        engine_.CreateContainer(container->name, docker::CreateContainerBody(*container));
    if (!created) Die("create: " + created.error().message);
    if (auto started = engine_.StartContainer(created->id); !started) {
      Die("start: " + started.error().message);
    }
    return created->id;
  }

  std::string Exec(const std::string& id, const std::string& code) {
    nlohmann::json body = {{"AttachStdout", true},
                           {"AttachStderr", true},
                           {"Tty", false},
                           {"Cmd", {"python3", "-c", code}}};
    docker::HttpRequest create;
    create.method = "POST";
    create.target = engine_.Versioned("/containers/" + id + "/exec");
    create.body = body.dump();
    auto created = http_.Send(create);
    if (!created || created->status != 201) Die("exec create failed");
    std::string exec_id = nlohmann::json::parse(created->body)["Id"];
    docker::HttpRequest start;
    start.method = "POST";
    start.target = engine_.Versioned("/exec/" + exec_id + "/start");
    start.body = R"({"Detach":false,"Tty":false})";
    auto output = http_.Send(start);  // the multiplexed output, until the process ends
    if (!output || output->status != 200) Die("exec start failed");
    docker::HttpRequest inspect;
    inspect.target = engine_.Versioned("/exec/" + exec_id + "/json");
    auto state = http_.Send(inspect);
    if (!state || nlohmann::json::parse(state->body)["ExitCode"] != 0) Die("exec failed");
    return output->body;
  }

 private:
  const docker::EngineClient& engine_;
  docker::UnixSocketHttp http_;
};

}  // namespace

int main(int argc, char** argv) {
  int runs = 10;
  int warm_runs = 200;
  std::string image;
  std::string rootfs;
  std::string archive;
  bool verbose = false;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) Die(arg + " needs a value");
      return argv[++i];
    };
    if (arg == "--runs")
      runs = std::stoi(value());
    else if (arg == "--warm")
      warm_runs = std::stoi(value());
    else if (arg == "--image")
      image = value();
    else if (arg == "--rootfs")
      rootfs = value();
    else if (arg == "--archive")
      archive = value();
    else if (arg == "--verbose")
      verbose = true;
    else
      Die("unknown argument " + arg);
  }
  spdlog::set_level(verbose ? spdlog::level::debug : spdlog::level::warn);

  auto backend = docker::DockerBackend::Connect();
  if (!backend) Die(backend.error().message);
  auto agent_dir = FindAgentDir();
  if (!agent_dir) Die(agent_dir.error().message);
  if (image.empty()) image = "mcp-sandbox/python:latest";
  if (auto ensured = (*backend)->EnsureImage(image, archive); !ensured) {
    Die(ensured.error().message);
  }

  auto spec_for = [&](int i) {
    SandboxSpec spec;
    spec.session_id = SessionId(i);
    spec.image_name = image;
    spec.docker.reference = image;
    spec.rootfs = rootfs;
    spec.agent_dir = *agent_dir;
    spec.env = {"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                "HOME=/mnt/data"};
    return spec;
  };
  std::vector<Row> rows;

  Row ns_row{"namespace backend", {}, {}, ""};
  if (!rootfs.empty()) {
    sandbox::testing::TempDir state;
    NamespaceBackend ns_backend(state.path(), *agent_dir, nullptr);
    MeasureBackend(ns_backend, spec_for, runs, warm_runs, ns_row);
  } else {
    ns_row.note = "no --rootfs given";
  }
  rows.push_back(ns_row);

  Row docker_row{"Docker backend (agent over attach)", {}, {}, ""};
  MeasureBackend(
      **backend, [&](int i) { return spec_for(1000 + i); }, runs, warm_runs, docker_row);
  rows.push_back(docker_row);

  // Per-call exec, through the Engine API (what the replaced server's SDK sent).
  Row exec_row{"per-call exec, Engine API (replaced server)", {}, {}, ""};
  Row cli_row{"per-call `docker exec` CLI", {}, {}, "includes the CLI's own start-up"};
  {
    ExecPerCall exec(**backend, (*backend)->engine().socket_path());
    for (int i = 0; i <= runs; ++i) {
      auto t0 = Clock::now();
      std::string id =
          exec.Create(spec_for(2000 + i), image, {(*backend)->host(), (*backend)->owner(), ""});
      exec.Exec(id, "print(1)");
      if (i > 0) exec_row.cold.push_back(Ms(Clock::now() - t0));
      if (i == runs) {
        int exec_runs = std::min(warm_runs, 50);
        for (int w = 0; w < exec_runs; ++w) {
          auto t = Clock::now();
          exec.Exec(id, "print(1)");
          exec_row.warm.push_back(Ms(Clock::now() - t));
        }
        for (int w = 0; w < std::min(exec_runs, 20); ++w) {
          auto t = Clock::now();
          std::string out;
          if (sandbox::testing::RunShell("docker exec " + id + " python3 -c 'print(1)'", &out) !=
                  0 ||
              out != "1\n") {
            Die("docker exec CLI failed");
          }
          cli_row.warm.push_back(Ms(Clock::now() - t));
        }
      }
      (void)(*backend)->engine().RemoveContainer(id);
    }
  }
  rows.push_back(exec_row);
  rows.push_back(cli_row);

  const auto& info = (*backend)->engine().info();
  std::printf("Docker %s (API %s), image %s, %d cold runs, %d warm runs; times in ms.\n\n",
              info.server_version.c_str(), info.api_version.ToString().c_str(), image.c_str(), runs,
              warm_runs);
  std::printf(
      "| approach | create + first print(1), median | p90 | warm print(1), median | "
      "p90 | note |\n|---|---:|---:|---:|---:|---|\n");
  for (const Row& row : rows) {
    std::printf("| %s | %s | %s | %s | %s | %s |\n", row.approach.c_str(),
                Cell(row.cold, 0.5).c_str(), Cell(row.cold, 0.9).c_str(),
                Cell(row.warm, 0.5).c_str(), Cell(row.warm, 0.9).c_str(), row.note.c_str());
  }
  std::printf(
      "\nTargets for the Docker backend: create + first print(1) <= 400 ms; warm print(1) "
      "<= 10 ms (no docker exec per call).\n");
  return 0;
}
