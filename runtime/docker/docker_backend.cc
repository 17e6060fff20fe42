#include "runtime/docker/docker_backend.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <thread>

#include <spdlog/spdlog.h>

#include "runtime/cgroup/background_cpu.h"
#include "runtime/cgroup/usage_files.h"
#include "runtime/docker/attach_stream.h"
#include "runtime/docker/container_cgroup.h"
#include "runtime/docker/container_spec.h"
#include "runtime/docker/daemon_runtime.h"
#include "runtime/docker/docker_limits.h"
#include "runtime/docker/owner.h"
#include "runtime/docker/unix_http.h"
#include "seccomp/policy.h"

namespace sandbox::docker {
namespace {

using Millis = std::chrono::duration<double, std::milli>;

uint64_t UintAt(const nlohmann::json& object, const nlohmann::json::json_pointer& pointer) {
  if (!object.contains(pointer)) return 0;
  const nlohmann::json& value = object.at(pointer);
  return value.is_number_unsigned() || value.is_number_integer() ? value.get<uint64_t>() : 0;
}

class DockerSandbox : public Sandbox {
 public:
  DockerSandbox(std::shared_ptr<EngineClient> engine, std::shared_ptr<RemovalBacklog> backlog,
                std::string id, std::string session_id, std::unique_ptr<AttachStream> stream,
                EnforcedLimits limits, std::optional<ContainerCgroupPaths> cgroup,
                int64_t started_unix)
      : engine_(std::move(engine)),
        backlog_(std::move(backlog)),
        id_(std::move(id)),
        session_id_(std::move(session_id)),
        stream_(std::move(stream)),
        limits_(std::move(limits)),
        cgroup_(std::move(cgroup)),
        usage_files_(cgroup_ ? CgroupUsageFiles::Open(cgroup_->v2, cgroup_->memory, cgroup_->cpu)
                             : CgroupUsageFiles()),
        started_unix_(started_unix) {}

  ~DockerSandbox() override {
    background_.reset();  // no quota written to a container being removed
    // DELETE ?force=1 kills what still runs; the attach stream then ends.
    if (auto removed = engine_->RemoveContainer(id_); !removed) {
      spdlog::error("session {}: remove container {}: {} (retried before the next start)",
                    session_id_, id_.substr(0, 12), removed.error().message);
      backlog_->Add(id_);
    }
  }

  ByteStream& stream() override { return *stream_; }
  Status Kill() override { return engine_->KillContainer(id_); }
  const EnforcedLimits& enforced_limits() const override { return limits_; }
  std::string backend_name() const override { return "docker"; }

  // The container keeps its CPU shares (1024) either way; at background priority it is capped
  // while foreground calls run (runtime/cgroup/background_cpu.h), by writing its cgroup's quota
  // on this host: the cap comes and goes with every first and last call, far too often for
  // the daemon's update (20-50 ms each, per container). The container's own quota, as the
  // daemon set it (NanoCpus), is read first and written back at the raise. Where the cgroup is
  // not visible from here (a daemon in another machine or pid namespace) there is no cap: the
  // container then competes at its normal weight, which costs a call at most a fair share.
  Status SetCpuPriority(CpuPriority priority) override {
    if (priority == CpuPriority::kNormal) {
      background_.reset();
      return {};
    }
    if (background_ || !cgroup_ || cgroup_->cpu_control.empty()) return {};
    SBX_ASSIGN_OR_RETURN(background_,
                         cgroup::BackgroundCpuGroup::Join(cgroup_->cpu_control, cgroup_->v2,
                                                          cgroup::BackgroundCpuCap::Instance()));
    return {};
  }

  SandboxUsage Usage() override {
    if (cgroup_) {
      SandboxUsage usage = ReadContainerUsage(*cgroup_);
      // On cgroup v1 a per-call reset clears the session's mark: keep the larger.
      usage.memory_peak_bytes = std::max(usage.memory_peak_bytes, usage_files_.PeakBeforeResets());
      return usage;
    }
    SandboxUsage usage;
    if (auto stats = engine_->ContainerStats(id_)) {
      using Pointer = nlohmann::json::json_pointer;
      usage.memory_bytes = UintAt(*stats, Pointer("/memory_stats/usage"));
      usage.memory_peak_bytes = UintAt(*stats, Pointer("/memory_stats/max_usage"));
      usage.pids = static_cast<uint32_t>(UintAt(*stats, Pointer("/pids_stats/current")));
      usage.cpu_seconds =
          static_cast<double>(UintAt(*stats, Pointer("/cpu_stats/cpu_usage/total_usage"))) / 1e9;
    } else {
      spdlog::debug("session {}: container stats: {}", session_id_, stats.error().message);
    }
    usage.oom_kills = OomKills();
    return usage;
  }

  // From the container's cgroup when this host can see it; the Engine API has no reset.
  std::function<std::optional<uint64_t>()> StartMemoryPeakWindow() override {
    if (!cgroup_) return {};
    auto reader = usage_files_.StartMemoryPeakWindow();
    if (!reader) return {};
    return std::move(*reader);
  }

  // Read around every run: from the kept cgroup files, else the whole of Usage().
  double CpuSeconds() override { return cgroup_ ? usage_files_.CpuSeconds() : Usage().cpu_seconds; }

  uint64_t OomKills() override {
    if (cgroup_) return usage_files_.OomKills();
    // The daemon emits "oom" whenever the container's memory cgroup kills a process, also
    // when that is not the container's init (unlike State.OOMKilled).
    auto ooms = engine_->CountContainerEvents(id_, "oom", started_unix_);
    if (!ooms) {
      spdlog::debug("session {}: oom events: {}", session_id_, ooms.error().message);
      return 0;
    }
    return static_cast<uint64_t>(*ooms);
  }

 private:
  std::shared_ptr<EngineClient> engine_;
  std::shared_ptr<RemovalBacklog> backlog_;
  std::string id_;
  std::string session_id_;
  std::unique_ptr<AttachStream> stream_;
  EnforcedLimits limits_;
  std::optional<ContainerCgroupPaths> cgroup_;
  CgroupUsageFiles usage_files_;  // the container cgroup's files read around every run
  int64_t started_unix_;
  std::unique_ptr<cgroup::BackgroundCpuGroup> background_;  // while at background priority
};

// Removes a half-made container unless released.
class ContainerGuard {
 public:
  ContainerGuard(const EngineClient& engine, RemovalBacklog& backlog, std::string id)
      : engine_(engine), backlog_(backlog), id_(std::move(id)) {}
  ~ContainerGuard() {
    if (id_.empty()) return;
    if (auto removed = engine_.RemoveContainer(id_); !removed) {
      spdlog::error("remove half-made container {}: {}", id_.substr(0, 12),
                    removed.error().message);
      backlog_.Add(id_);
    }
  }
  void Release() { id_.clear(); }

 private:
  const EngineClient& engine_;
  RemovalBacklog& backlog_;
  std::string id_;
};

std::string DefaultSeccompProfile() { return seccomp::DockerProfileJson(); }

// The daemon's 409 for a create whose name another container holds.
bool NameTaken(const Error& error) {
  return error.message.find("answered 409") != std::string::npos &&
         error.message.find("is already in use") != std::string::npos;
}

}  // namespace

Result<std::unique_ptr<DockerBackend>> DockerBackend::Connect(DockerBackendOptions options) {
  if (options.socket_path.empty()) {
    SBX_ASSIGN_OR_RETURN(options.socket_path, DockerSocketPath(std::getenv("DOCKER_HOST")));
  }
  SBX_ASSIGN_OR_RETURN(std::unique_ptr<EngineClient> engine,
                       EngineClient::Connect(options.socket_path));
  const DaemonInfo& info = engine->info();
  spdlog::info("Docker daemon {} at {}: API {} (daemon's newest {}), cgroup v{} ({}), runtime {}",
               info.server_version, options.socket_path, info.api_version.ToString(),
               info.server_api_version.ToString(), info.cgroup_version, info.cgroup_driver,
               DescribeRuntime(info, options.runtime));
  // Not fatal: the daemon may register it by a reload before the first session; each create
  // then says the same (ExplainCreateError) as a tool error.
  if (auto runtime = RequireRuntime(info, options.runtime); !runtime) {
    spdlog::warn("{}", runtime.error().message);
  }
  return std::unique_ptr<DockerBackend>(new DockerBackend(std::move(engine), std::move(options)));
}

DockerBackend::DockerBackend(std::unique_ptr<EngineClient> engine, DockerBackendOptions options)
    : engine_(std::move(engine)),
      local_(CurrentIdentity()),
      seccomp_profile_json_(options.seccomp_profile_json ? *options.seccomp_profile_json
                                                         : DefaultSeccompProfile()),
      usage_from_engine_api_(options.usage_from_engine_api),
      runtime_(options.runtime) {
  owner_.process = options.owner.empty() ? CurrentOwner() : options.owner;
  owner_.host = options.host.empty() ? local_.host : options.host;
  owner_.replica = options.replica;
  local_.replica = options.replica;
}

DockerBackend::~DockerBackend() {
  // Sessions are gone by now; what the daemon refused to remove then gets one more try.
  if (backlog_->size() > 0) backlog_->Retry(*engine_);
}

Status DockerBackend::EnsureImage(const std::string& image, const std::string& archive) {
  SBX_TRY(EnsureImage(image, archive, DockerImageProvider()));
  return {};
}

Result<std::string> DockerBackend::EnsureImage(const std::string& image, const std::string& archive,
                                               const DockerImageProvider& provider) {
  std::lock_guard<std::mutex> lock(image_mutex_);
  SBX_ASSIGN_OR_RETURN(bool present, engine_->ImageExists(image));
  if (present) return image;
  std::string reference = image;
  std::string load_from = archive;
  if (load_from.empty() && provider) {
    // An archive made on demand (a stored image exported): the daemon knows the image by the
    // id of the exported config, and may have it from an earlier session already.
    auto started = Clock::now();
    SBX_ASSIGN_OR_RETURN(DockerImageSource source, provider());
    spdlog::debug("image {}: archive {} ({:.0f} ms)", image, source.archive,
                  Millis(Clock::now() - started).count());
    reference = source.image_id;
    SBX_ASSIGN_OR_RETURN(present, engine_->ImageExists(reference));
    if (present) return reference;
    load_from = source.archive;
  }
  if (load_from.empty()) {
    return Fail(ErrorCode::kNotFound,
                "image {} is not in the Docker daemon and no image archive was given to load "
                "(run `mcp-sandbox image build`)",
                image);
  }
  spdlog::info("loading image {} into the Docker daemon from {}", reference, load_from);
  auto started = Clock::now();
  SBX_TRY(engine_->LoadImage(load_from));
  SBX_ASSIGN_OR_RETURN(present, engine_->ImageExists(reference));
  if (!present) {
    return Fail(ErrorCode::kNotFound, "{} loaded, but it does not provide image {}", load_from,
                reference);
  }
  spdlog::info("loaded image {} in {:.0f} ms", reference, Millis(Clock::now() - started).count());
  return reference;
}

Result<std::unique_ptr<Sandbox>> DockerBackend::Start(const SandboxSpec& spec) {
  auto t0 = Clock::now();
  if (IsRunscRuntime(runtime_) && !spec.egress_socket_path.empty()) {
    // sandbox-init hands each connection to the proxy over the bound socket with SCM_RIGHTS,
    // which the Sentry cannot do on a host socket (EINVAL); the gVisor backend bridges instead.
    return Fail(ErrorCode::kSandboxUnavailable,
                "egress (SANDBOX_EGRESS_ALLOW) does not work on Docker under runsc: gVisor's "
                "Sentry cannot pass a socket to the host's egress proxy; use "
                "SANDBOX_BACKEND=gvisor for egress beside gVisor's kernel, or the daemon's "
                "default runtime (docs/docker.md \"runsc\")");
  }
  // The daemon answers again after a failed removal (it was down): remove those first.
  if (backlog_->size() > 0) backlog_->Retry(*engine_);
  SBX_ASSIGN_OR_RETURN(
      const std::string image,
      EnsureImage(spec.docker.reference.empty() ? spec.image_name : spec.docker.reference,
                  spec.docker.archive, spec.docker.source)
          .map_error([&](Error e) { return std::move(e).Context("docker image"); }));
  SBX_ASSIGN_OR_RETURN(ContainerSpec container,
                       ContainerSpecFor(spec, image, owner_, seccomp_profile_json_));
  container.runtime = runtime_;
  auto t1 = Clock::now();
  auto create = [&] {
    return engine_->CreateContainer(container.name, CreateContainerBody(container));
  };
  auto made = create();
  if (!made && NameTaken(made.error())) {
    SBX_TRY(ClearName(container.name).map_error([](Error e) {
      return std::move(e).Context("create container");
    }));
    made = create();
  }
  SBX_ASSIGN_OR_RETURN(CreatedContainer created, std::move(made).map_error([&](Error e) {
    return ExplainCreateError(std::move(e), runtime_).Context("create container");
  }));
  ContainerGuard guard(*engine_, *backlog_, created.id);
  for (const std::string& warning : created.warnings) {
    spdlog::warn("session {}: Docker: {}", spec.session_id, warning);
  }
  auto t2 = Clock::now();
  // Attach before start: the agent's first bytes (its hello) must not be lost.
  SBX_ASSIGN_OR_RETURN(HijackedConnection connection,
                       engine_->AttachContainer(created.id).map_error([](Error e) {
                         return std::move(e).Context("attach container");
                       }));
  auto stream = std::make_unique<AttachStream>(std::move(connection), spec.session_id);
  auto t3 = Clock::now();
  int64_t started_unix = std::chrono::duration_cast<std::chrono::seconds>(
                             std::chrono::system_clock::now().time_since_epoch())
                             .count();
  SBX_TRY(engine_->StartContainer(created.id).map_error([](Error e) {
    return std::move(e).Context("start container");
  }));
  auto t4 = Clock::now();
  SBX_ASSIGN_OR_RETURN(nlohmann::json inspected, engine_->InspectContainer(created.id));
  EnforcedLimits limits = PlanDockerLimits(spec.limits, engine_->info());
  if (auto host_config = inspected.find("HostConfig"); host_config != inspected.end()) {
    limits = CorrectFromHostConfig(std::move(limits), *host_config);
  }
  std::optional<ContainerCgroupPaths> cgroup;
  if (!usage_from_engine_api_) {
    int64_t pid =
        static_cast<int64_t>(UintAt(inspected, nlohmann::json::json_pointer("/State/Pid")));
    if (auto found = FindContainerCgroup(static_cast<pid_t>(pid), created.id)) {
      cgroup = std::move(*found);
    } else {
      spdlog::debug("session {}: usage through the Engine API: {}", spec.session_id,
                    found.error().message);
    }
  }
  guard.Release();
  spdlog::debug(
      "session {}: container {} image {:.1f} ms, create {:.1f} ms, attach {:.1f} ms, "
      "start {:.1f} ms, inspect {:.1f} ms",
      spec.session_id, created.id.substr(0, 12), Millis(t1 - t0).count(), Millis(t2 - t1).count(),
      Millis(t3 - t2).count(), Millis(t4 - t3).count(), Millis(Clock::now() - t4).count());
  std::unique_ptr<Sandbox> sandbox(new DockerSandbox(engine_, backlog_, created.id, spec.session_id,
                                                     std::move(stream), std::move(limits),
                                                     std::move(cgroup), started_unix));
  if (spec.cpu_priority != CpuPriority::kNormal) {
    // A hint: uncapped, the container still works, at its normal weight.
    if (auto set = sandbox->SetCpuPriority(spec.cpu_priority); !set) {
      spdlog::warn("session {}: background CPU cap: {}", spec.session_id, set.error().message);
    }
  }
  return sandbox;
}

EnforcedLimits DockerBackend::PlanLimits(const Limits& limits) const {
  return PlanDockerLimits(limits, engine_->info());
}

Status DockerBackend::ClearName(const std::string& name) {
  auto inspected = engine_->InspectContainer(name);
  if (!inspected) {
    if (inspected.error().code == ErrorCode::kNotFound) return {};  // gone meanwhile
    return Fail(std::move(inspected.error()));
  }
  const nlohmann::json* labels = nullptr;
  if (auto config = inspected->find("Config"); config != inspected->end() && config->is_object()) {
    if (auto found = config->find("Labels"); found != config->end() && found->is_object()) {
      labels = &*found;
    }
  }
  auto label = [&](const char* key) {
    if (labels == nullptr) return std::string();
    auto it = labels->find(key);
    return it != labels->end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  const std::string owner = label(kOwnerLabel);
  if (owner != owner_.process || label(kHostLabel) != owner_.host) {
    OwnerJudgement judged =
        JudgeOwner(local_, label(kHostLabel), owner, ProcessRuns, label(kReplicaLabel));
    if (judged.verdict != OwnerVerdict::kGone) {
      return Fail(ErrorCode::kSandboxUnavailable,
                  "container {} holds this session's name and is not ours to remove: {}", name,
                  judged.why);
    }
  }
  spdlog::info("container {} of an earlier sandbox of this session still held its name: removed",
               name);
  SBX_TRY(engine_->RemoveContainer(name));
  // A removal another remover started is answered at once; the name is free only once it ends.
  auto deadline = Clock::now() + std::chrono::seconds(10);
  for (;;) {
    auto still = engine_->InspectContainer(name);
    if (!still && still.error().code == ErrorCode::kNotFound) return {};
    if (Clock::now() >= deadline) {
      return Fail(ErrorCode::kSandboxUnavailable,
                  "container {} of an earlier sandbox of this session is still being removed",
                  name);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

Result<int> DockerBackend::SweepOrphans() {
  SBX_ASSIGN_OR_RETURN(std::vector<ContainerSummary> containers,
                       engine_->ListContainers(kSessionLabel));
  auto label = [](const ContainerSummary& container, const char* key) {
    auto it = container.labels.find(key);
    return it == container.labels.end() ? std::string_view() : std::string_view(it->second);
  };
  std::lock_guard<std::mutex> lock(sweep_mutex_);
  int swept = 0;
  for (const ContainerSummary& container : containers) {
    OwnerJudgement judged =
        JudgeOwner(local_, label(container, kHostLabel), label(container, kOwnerLabel), ProcessRuns,
                   label(container, kReplicaLabel));
    if (judged.verdict == OwnerVerdict::kAlive) continue;
    if (judged.verdict == OwnerVerdict::kNotJudged) {
      if (left_alone_.insert(container.id).second) {
        spdlog::info(
            "sweep: leaving container {} alone: {} (remove it with docker rm -f if "
            "nothing uses it)",
            container.name, judged.why);
      }
      continue;
    }
    if (auto removed = engine_->RemoveContainer(container.id); !removed) {
      spdlog::warn("sweep: remove container {}: {}", container.name, removed.error().message);
      continue;
    }
    spdlog::info("swept container {}: {}", container.name, judged.why);
    ++swept;
  }
  return swept;
}

}  // namespace sandbox::docker
