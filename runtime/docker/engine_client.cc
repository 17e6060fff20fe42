#include "runtime/docker/engine_client.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>

#include "runtime/base/json_parse.h"
#include "runtime/docker/engine_error.h"

namespace sandbox::docker {
namespace {

constexpr std::chrono::milliseconds kLoadTimeout{30 * 60 * 1000};
constexpr std::chrono::milliseconds kAttachTimeout{30'000};

// A request with the given method and target (path and query) and no body.
HttpRequest Request(std::string method, std::string target) {
  HttpRequest request;
  request.method = std::move(method);
  request.target = std::move(target);
  return request;
}

HttpRequest PostJson(std::string target, std::string body) {
  HttpRequest request = Request("POST", std::move(target));
  request.body = std::move(body);
  return request;
}

// The daemon is another program behind a socket: its answers are bounded in depth like any
// JSON from outside (runtime/base/json_parse.h).
Result<nlohmann::json> ParseJson(std::string_view text, std::string_view what) {
  auto parsed = ParseJsonBounded(text);
  if (!parsed) {
    return Fail(ErrorCode::kSandboxUnavailable, "{}: the Docker daemon sent malformed JSON ({})",
                what, parsed.error().message);
  }
  return std::move(*parsed);
}

// One line of a JSON stream, or null when it is not (bounded) JSON.
nlohmann::json ParseStreamLine(std::string_view line) {
  auto parsed = ParseJsonBounded(line);
  return parsed ? std::move(*parsed) : nlohmann::json();
}

std::string StringField(const nlohmann::json& object, const char* key) {
  auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

bool BoolField(const nlohmann::json& object, const char* key) {
  auto it = object.find(key);
  return it != object.end() && it->is_boolean() && it->get<bool>();
}

}  // namespace

Result<std::unique_ptr<EngineClient>> EngineClient::Connect(const std::string& socket_path) {
  UnixSocketHttp http(socket_path);
  auto unreachable = [&](Error error) {
    error.code = ErrorCode::kSandboxUnavailable;
    return std::move(error).Context(fmt::format("no Docker daemon reachable at {}", socket_path));
  };
  // Say plainly what is wrong with the socket itself; curl only says it could not connect.
  struct stat st {};
  if (::stat(socket_path.c_str(), &st) != 0 || !S_ISSOCK(st.st_mode)) {
    return Fail(ErrorCode::kSandboxUnavailable, "no Docker daemon reachable at {}: {}", socket_path,
                errno == ENOENT ? "no such socket" : "not a unix socket");
  }
  if (::access(socket_path.c_str(), R_OK | W_OK) != 0) {
    return Fail(ErrorCode::kSandboxUnavailable,
                "no Docker daemon reachable at {}: permission denied (run as root or as a member "
                "of the socket's group)",
                socket_path);
  }
  HttpRequest ping = Request("GET", "/_ping");
  ping.timeout = std::chrono::milliseconds(5000);
  auto pong = http.Send(ping);
  if (!pong) return Fail(unreachable(std::move(pong.error())));
  if (pong->status != 200)
    return Fail(unreachable(EngineError("GET /_ping", pong->status, pong->body)));
  std::string header = pong->Header("API-Version");
  if (header.empty()) {
    return Fail(ErrorCode::kSandboxUnavailable,
                "the daemon at {} sent no API-Version header: not a Docker Engine API",
                socket_path);
  }
  DaemonInfo info;
  SBX_ASSIGN_OR_RETURN(info.server_api_version, ParseApiVersion(header));
  info.os_type = pong->Header("OSType");
  // /version at the daemon's own version names its oldest accepted version; then negotiate.
  std::optional<ApiVersion> server_min;
  auto version = http.Send(Request("GET", "/version"));
  if (version && version->status == 200) {
    SBX_ASSIGN_OR_RETURN(nlohmann::json body, ParseJson(version->body, "GET /version"));
    info.server_version = StringField(body, "Version");
    if (std::string min = StringField(body, "MinAPIVersion"); !min.empty()) {
      SBX_ASSIGN_OR_RETURN(server_min, ParseApiVersion(min));
    }
  }
  SBX_ASSIGN_OR_RETURN(info.api_version, NegotiateApiVersion(info.server_api_version, server_min));
  if (!info.os_type.empty() && info.os_type != "linux") {
    return Fail(ErrorCode::kSandboxUnavailable, "the Docker daemon runs {} containers, not linux",
                info.os_type);
  }

  std::unique_ptr<EngineClient> client(new EngineClient(std::move(http), std::move(info)));
  SBX_ASSIGN_OR_RETURN(HttpResponse daemon,
                       client->Call(Request("GET", client->Versioned("/info"))));
  SBX_ASSIGN_OR_RETURN(nlohmann::json body, ParseJson(daemon.body, "GET /info"));
  DaemonInfo& out = client->info_;
  out.cgroup_version = StringField(body, "CgroupVersion");
  out.cgroup_driver = StringField(body, "CgroupDriver");
  out.memory_limit = BoolField(body, "MemoryLimit");
  out.swap_limit = BoolField(body, "SwapLimit");
  out.pids_limit = BoolField(body, "PidsLimit");
  out.cpu_cfs_quota = BoolField(body, "CpuCfsQuota");
  if (auto it = body.find("SecurityOptions"); it != body.end() && it->is_array()) {
    for (const auto& option : *it) {
      if (option.is_string()) out.security_options.push_back(option.get<std::string>());
    }
  }
  if (auto it = body.find("Runtimes"); it != body.end() && it->is_object()) {
    for (const auto& [name, runtime] : it->items()) {
      out.runtimes[name] = runtime.is_object() ? StringField(runtime, "path") : "";
    }
  }
  out.default_runtime = StringField(body, "DefaultRuntime");
  return client;
}

std::string EngineClient::Versioned(std::string_view path) const {
  return fmt::format("/v{}{}", info_.api_version.ToString(), path);
}

Result<HttpResponse> EngineClient::Call(HttpRequest request,
                                        std::initializer_list<long> also_ok) const {
  std::string what = fmt::format("{} {}", request.method, request.target);
  SBX_ASSIGN_OR_RETURN(HttpResponse response, http_.Send(request));
  bool ok = response.status >= 200 && response.status < 300;
  for (long status : also_ok) ok = ok || response.status == status;
  if (!ok) return Fail(EngineError(what, response.status, response.body));
  return response;
}

Result<bool> EngineClient::ImageExists(const std::string& image) const {
  auto response = Call(Request("GET", Versioned("/images/" + image + "/json")));
  if (!response) {
    if (response.error().code == ErrorCode::kNotFound) return false;
    return Fail(std::move(response.error()));
  }
  return true;
}

Status EngineClient::LoadImage(const std::string& archive_path) const {
  HttpRequest request = Request("POST", Versioned("/images/load?quiet=1"));
  request.content_type = "application/x-tar";
  request.upload_file = archive_path;
  request.timeout = kLoadTimeout;
  SBX_ASSIGN_OR_RETURN(HttpResponse response, Call(std::move(request)));
  // The body is a stream of JSON messages; a failed load is one with "error" (status 200).
  size_t start = 0;
  while (start < response.body.size()) {
    size_t end = response.body.find('\n', start);
    if (end == std::string::npos) end = response.body.size();
    nlohmann::json message =
        ParseStreamLine(std::string_view(response.body).substr(start, end - start));
    start = end + 1;
    if (message.is_object() && message.contains("error")) {
      return Fail(ErrorCode::kSandboxUnavailable, "load image {}: {}", archive_path,
                  message["error"].is_string() ? message["error"].get<std::string>()
                                               : message["error"].dump());
    }
  }
  return {};
}

Result<CreatedContainer> EngineClient::CreateContainer(const std::string& name,
                                                       const nlohmann::json& body) const {
  SBX_ASSIGN_OR_RETURN(
      HttpResponse response,
      Call(PostJson(Versioned("/containers/create?name=" + UrlEncode(name)), body.dump())));
  SBX_ASSIGN_OR_RETURN(nlohmann::json reply, ParseJson(response.body, "POST /containers/create"));
  CreatedContainer created;
  created.id = StringField(reply, "Id");
  if (created.id.empty()) {
    return Fail(ErrorCode::kSandboxUnavailable, "create container {}: no Id in the reply", name);
  }
  if (auto it = reply.find("Warnings"); it != reply.end() && it->is_array()) {
    for (const auto& warning : *it) {
      if (warning.is_string()) created.warnings.push_back(warning.get<std::string>());
    }
  }
  return created;
}

Result<HijackedConnection> EngineClient::AttachContainer(const std::string& id) const {
  return OpenHijacked(socket_path(),
                      Versioned("/containers/" + id + "/attach?stream=1&stdin=1&stdout=1&stderr=1"),
                      kAttachTimeout);
}

Status EngineClient::StartContainer(const std::string& id) const {
  // 304: already started.
  SBX_TRY(Call(Request("POST", Versioned("/containers/" + id + "/start")), {304}));
  return {};
}

Status EngineClient::KillContainer(const std::string& id) const {
  auto response = http_.Send(Request("POST", Versioned("/containers/" + id + "/kill?signal=KILL")));
  if (!response) return Fail(std::move(response.error()));
  // 409: "is not running" — already dead is what we wanted.
  if (response->status == 204 || response->status == 409 || response->status == 304) return {};
  return Fail(EngineError("kill container " + id, response->status, response->body));
}

Status EngineClient::RemoveContainer(const std::string& id) const {
  auto response = http_.Send(Request("DELETE", Versioned("/containers/" + id + "?force=1&v=1")));
  if (!response) return Fail(std::move(response.error()));
  if (response->status == 204 || response->status == 404) return {};
  // 409 "removal already in progress": another remover owns it now.
  if (response->status == 409 && response->body.find("already in progress") != std::string::npos) {
    return {};
  }
  return Fail(EngineError("remove container " + id, response->status, response->body));
}

Result<nlohmann::json> EngineClient::InspectContainer(const std::string& id) const {
  SBX_ASSIGN_OR_RETURN(HttpResponse response,
                       Call(Request("GET", Versioned("/containers/" + id + "/json"))));
  return ParseJson(response.body, "inspect container");
}

Result<std::vector<std::string>> EngineClient::UpdateContainer(
    const std::string& id, const nlohmann::json& resources) const {
  SBX_ASSIGN_OR_RETURN(
      HttpResponse response,
      Call(PostJson(Versioned("/containers/" + id + "/update"), resources.dump())));
  SBX_ASSIGN_OR_RETURN(nlohmann::json reply, ParseJson(response.body, "update container"));
  std::vector<std::string> warnings;
  if (auto it = reply.find("Warnings"); it != reply.end() && it->is_array()) {
    for (const auto& warning : *it) {
      if (warning.is_string()) warnings.push_back(warning.get<std::string>());
    }
  }
  return warnings;
}

Result<std::vector<ContainerSummary>> EngineClient::ListContainers(const std::string& label) const {
  nlohmann::json filters = {{"label", {label}}};
  SBX_ASSIGN_OR_RETURN(HttpResponse response,
                       Call(Request("GET", Versioned("/containers/json?all=1&filters=" +
                                                     UrlEncode(filters.dump())))));
  SBX_ASSIGN_OR_RETURN(nlohmann::json list, ParseJson(response.body, "list containers"));
  std::vector<ContainerSummary> containers;
  if (!list.is_array()) return containers;
  for (const auto& item : list) {
    if (!item.is_object()) continue;
    ContainerSummary summary;
    summary.id = StringField(item, "Id");
    summary.state = StringField(item, "State");
    if (auto names = item.find("Names");
        names != item.end() && names->is_array() && !names->empty() && names->front().is_string()) {
      summary.name = names->front().get<std::string>();
      if (!summary.name.empty() && summary.name[0] == '/') summary.name.erase(0, 1);
    }
    if (auto labels = item.find("Labels"); labels != item.end() && labels->is_object()) {
      for (const auto& [key, value] : labels->items()) {
        if (value.is_string()) summary.labels[key] = value.get<std::string>();
      }
    }
    if (!summary.id.empty()) containers.push_back(std::move(summary));
  }
  return containers;
}

Result<nlohmann::json> EngineClient::ContainerStats(const std::string& id) const {
  SBX_ASSIGN_OR_RETURN(
      HttpResponse response,
      Call(Request("GET", Versioned("/containers/" + id + "/stats?stream=0&one-shot=1"))));
  return ParseJson(response.body, "container stats");
}

Result<std::vector<std::map<std::string, std::string>>> EngineClient::ContainerTop(
    const std::string& id) const {
  SBX_ASSIGN_OR_RETURN(
      HttpResponse response,
      Call(Request("GET", Versioned("/containers/" + id + "/top?ps_args=" +
                                    UrlEncode("-eo pid,ppid,pgid,user,stat,args")))));
  SBX_ASSIGN_OR_RETURN(nlohmann::json top, ParseJson(response.body, "container top"));
  std::vector<std::map<std::string, std::string>> rows;
  auto titles = top.find("Titles");
  auto processes = top.find("Processes");
  if (titles == top.end() || processes == top.end() || !titles->is_array() ||
      !processes->is_array()) {
    return rows;
  }
  for (const auto& process : *processes) {
    if (!process.is_array()) continue;
    std::map<std::string, std::string> row;
    for (size_t i = 0; i < titles->size() && i < process.size(); ++i) {
      if ((*titles)[i].is_string() && process[i].is_string()) {
        row[(*titles)[i].get<std::string>()] = process[i].get<std::string>();
      }
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

Result<int> EngineClient::CountContainerEvents(const std::string& id, const std::string& action,
                                               int64_t since) const {
  nlohmann::json filters = {{"type", {"container"}}, {"container", {id}}, {"event", {action}}};
  auto now = std::chrono::duration_cast<std::chrono::duration<double>>(
      std::chrono::system_clock::now().time_since_epoch());
  // With `until`, the daemon replays the stored events of that window and closes the stream.
  SBX_ASSIGN_OR_RETURN(
      HttpResponse response,
      Call(Request("GET", Versioned(fmt::format("/events?since={}&until={:.6f}&filters={}", since,
                                                now.count(), UrlEncode(filters.dump()))))));
  int count = 0;
  size_t start = 0;
  while (start < response.body.size()) {
    size_t end = response.body.find('\n', start);
    if (end == std::string::npos) end = response.body.size();
    nlohmann::json event =
        ParseStreamLine(std::string_view(response.body).substr(start, end - start));
    start = end + 1;
    if (event.is_object() && StringField(event, "Action") == action) ++count;
  }
  return count;
}

}  // namespace sandbox::docker
