// A client of the Docker Engine API over its unix socket: just the calls the Docker backend
// needs. Connect() pings the daemon and negotiates the API version (never pinned); every call
// then uses versioned paths (/v1.NN/...). Daemon errors ({"message": ...}) become Errors naming
// the call and the status (404 -> kNotFound). Thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/base/result.h"
#include "runtime/docker/api_version.h"
#include "runtime/docker/hijacked_connection.h"
#include "runtime/docker/unix_http.h"

namespace sandbox::docker {

// What the daemon said about itself (/_ping, /version, /info).
struct DaemonInfo {
  ApiVersion api_version;         // the negotiated version every call uses
  ApiVersion server_api_version;  // the daemon's newest
  std::string server_version;     // "20.10.24+dfsg1"
  std::string os_type;            // "linux"
  std::string cgroup_version;     // "1" or "2" ("" when the daemon does not say)
  std::string cgroup_driver;      // "cgroupfs" or "systemd"
  bool memory_limit = false;      // the kernel features the daemon found
  bool swap_limit = false;
  bool pids_limit = false;
  bool cpu_cfs_quota = false;
  std::vector<std::string> security_options;    // "name=seccomp,profile=default", ...
  std::map<std::string, std::string> runtimes;  // registered OCI runtimes: name -> path
  std::string default_runtime;                  // "runc"
};

struct ContainerSummary {
  std::string id;
  std::string name;   // without the leading "/"
  std::string state;  // "created", "running", "exited", ...
  std::map<std::string, std::string> labels;
};

struct CreatedContainer {
  std::string id;
  std::vector<std::string> warnings;  // e.g. a limit the kernel cannot enforce
};

class EngineClient {
 public:
  // Pings the daemon on `socket_path`, negotiates the API version and reads /version and
  // /info. Fails with kSandboxUnavailable when nothing answers or no version is common.
  static Result<std::unique_ptr<EngineClient>> Connect(const std::string& socket_path);

  const DaemonInfo& info() const { return info_; }
  const std::string& socket_path() const { return http_.socket_path(); }

  // GET /images/{name}/json: true when present, false on 404.
  Result<bool> ImageExists(const std::string& image) const;
  // POST /images/load?quiet=1 with the archive (docker save or OCI layout tar) streamed from
  // disk. The daemon reports a bad archive in the stream, not the status: that is checked too.
  Status LoadImage(const std::string& archive_path) const;

  // POST /containers/create?name=...
  Result<CreatedContainer> CreateContainer(const std::string& name,
                                           const nlohmann::json& body) const;
  // POST /containers/{id}/attach?stream=1&stdin=1&stdout=1&stderr=1, hijacked. Call before
  // start so nothing the container writes is lost.
  Result<HijackedConnection> AttachContainer(const std::string& id) const;
  Status StartContainer(const std::string& id) const;
  // POST /containers/{id}/kill?signal=KILL. A container that is not running is not an error.
  Status KillContainer(const std::string& id) const;
  // DELETE /containers/{id}?force=1&v=1. A container that is already gone is not an error.
  Status RemoveContainer(const std::string& id) const;
  Result<nlohmann::json> InspectContainer(const std::string& id) const;
  // POST /containers/{id}/update with `resources` (e.g. {"CpuShares": 1024}), applied to the
  // running container's cgroup by the daemon. Returns the daemon's warnings.
  Result<std::vector<std::string>> UpdateContainer(const std::string& id,
                                                   const nlohmann::json& resources) const;
  // GET /containers/json?all=1&filters={"label":[label]}.
  Result<std::vector<ContainerSummary>> ListContainers(const std::string& label) const;
  // GET /containers/{id}/stats?stream=0&one-shot=1 (slow: the daemon may sample for ~1 s).
  Result<nlohmann::json> ContainerStats(const std::string& id) const;
  // GET /containers/{id}/top?ps_args=-eo pid,ppid,pgid,user,args: the processes, as rows of
  // strings keyed by column title.
  Result<std::vector<std::map<std::string, std::string>>> ContainerTop(const std::string& id) const;
  // How many `action` events ("oom", "die", ...) the container emitted since `since` (unix
  // seconds): GET /events?since=...&until=now&filters=...
  Result<int> CountContainerEvents(const std::string& id, const std::string& action,
                                   int64_t since) const;

  // "/v1.41" + path.
  std::string Versioned(std::string_view path) const;

 private:
  EngineClient(UnixSocketHttp http, DaemonInfo info)
      : http_(std::move(http)), info_(std::move(info)) {}

  // Sends a request and turns a status outside [200, 300) (and not in `also_ok`) into an Error.
  Result<HttpResponse> Call(HttpRequest request, std::initializer_list<long> also_ok = {}) const;

  UnixSocketHttp http_;
  DaemonInfo info_;
};

}  // namespace sandbox::docker
