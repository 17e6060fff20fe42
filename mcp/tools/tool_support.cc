#include "mcp/tools/tool_support.h"

#include <algorithm>
#include <chrono>
#include <ctime>

#include <fmt/format.h>

#include "mcp/jsonrpc.h"
#include "runtime/base/quoted.h"
#include "runtime/base/units.h"

namespace sandbox::mcp::tools {

Json Property(std::string_view type, std::string_view description, Json extra) {
  Json property = {{"type", type}, {"description", description}};
  for (auto& [key, value] : extra.items()) property[key] = value;
  return property;
}

Json InputSchema(Json properties, const std::vector<std::string>& required) {
  Json schema = {{"type", "object"}, {"properties", std::move(properties)}};
  if (!required.empty()) schema["required"] = required;
  schema["additionalProperties"] = false;
  return schema;
}

Json OutputSchema(Json properties, std::vector<std::string> required_on_success) {
  properties["error"] = {
      {"type", "string"},
      {"description", "Set when the call failed: a stable code such as session_busy or timeout"}};
  properties["message"] = {{"type", "string"}, {"description", "What went wrong, for people"}};
  Json success = {{"required", required_on_success}};
  Json failure = {{"required", {"error", "message"}}};
  return Json{{"type", "object"},
              {"properties", std::move(properties)},
              {"anyOf", Json::array({std::move(success), std::move(failure)})}};
}

Json Annotations(std::string_view title, bool read_only, bool destructive, bool idempotent,
                 bool open_world) {
  Json annotations = {{"title", title}, {"readOnlyHint", read_only}};
  if (!read_only) annotations["destructiveHint"] = destructive;
  annotations["idempotentHint"] = idempotent;
  annotations["openWorldHint"] = open_world;
  return annotations;
}

Status CheckUploadSize(const ToolSettings& settings, uint64_t size, std::string_view what,
                       bool estimated) {
  if (size <= settings.max_upload_bytes) return {};
  return Fail(ErrorCode::kUploadTooLarge,
              "{} has {}{}; files are limited to {} (SANDBOX_MAX_UPLOAD_BYTES)", what,
              estimated ? "about " : "", FormatBytes(size), FormatBytes(settings.max_upload_bytes));
}

bool RunsCodeWithNetwork(const ToolContext& context) {
  // The policy after the session manager's word on the backend: it drops the allowlist of a
  // backend that cannot carry egress, and then nothing may say there is a network.
  return context.sessions.config().egress.enabled();
}

Json SessionIdProperty(bool optional_creates) {
  // x-mcp-header (2026-07-28, server/tools.mdx): over HTTP the client mirrors the id into an
  // Mcp-Param-Session-Id header, so a front end can send the call to the host that holds the
  // session without reading the body. Other clients ignore the unknown keyword.
  return Property("string",
                  optional_creates
                      ? "Session to use (the session_id of an earlier result, as given). Omit it "
                        "to start a new session; the result tells you its id."
                      : "The session (the session_id of an earlier result, as given).",
                  {{"x-mcp-header", kSessionIdHeaderName}});
}

Result<SessionChoice> ResolveSession(ToolContext& context, ToolCall& call, const Json& arguments) {
  if (auto it = arguments.find("session_id"); it != arguments.end() && it->is_string()) {
    std::string id = it->get<std::string>();
    if (!IsValidSessionId(id)) {
      return Fail(ErrorCode::kInvalidSessionId, "{} is not a session id (expected {})",
                  ValidUtf8(Quoted(id)), kSessionIdShape);
    }
    return SessionChoice{std::move(id), false};
  }
  SBX_ASSIGN_OR_RETURN(SessionInfo info, context.sessions.Create(SessionOptions{}));
  call.Log(LogLevel::kInfo, fmt::format("created session {} (image {}, {} backend)", info.id,
                                        info.image, info.backend));
  return SessionChoice{info.id, true};
}

Json SessionIdExtra(const std::string& id) {
  if (!IsValidSessionId(id)) return Json::object();
  return Json{{"session_id", id}};
}

namespace {

bool HasControl(std::string_view text) {
  return std::any_of(text.begin(), text.end(), [](char c) {
    auto u = static_cast<unsigned char>(c);
    return u < 0x20 || u == 0x7F;
  });
}

}  // namespace

Result<std::string> UploadPath(std::string_view filename) {
  auto invalid = [&](std::string_view why) {
    return Fail(ErrorCode::kInvalidFilename, "invalid filename {}: {}",
                ValidUtf8(Quoted(filename, 200)), why);
  };
  if (filename.empty()) return invalid("it is empty");
  if (filename.size() > 1024) return invalid("longer than 1024 bytes");
  if (HasControl(filename)) return invalid("it contains control characters");
  if (ValidUtf8(filename).size() != filename.size()) return invalid("it is not UTF-8");
  std::string_view relative = filename;
  if (relative.front() == '/') {
    std::string prefix = std::string(kDataDir) + "/";
    if (relative.substr(0, prefix.size()) != prefix) {
      return invalid(fmt::format("files go to {}; give a name relative to it", kDataDir));
    }
    relative.remove_prefix(prefix.size());
  }
  if (relative.empty() || relative.back() == '/') return invalid("it names a directory");
  size_t start = 0;
  while (start < relative.size()) {
    size_t slash = relative.find('/', start);
    std::string_view part = relative.substr(
        start, slash == std::string_view::npos ? std::string_view::npos : slash - start);
    if (part.empty() || part == "." || part == "..") {
      return invalid("'.', '..' and empty path parts are not allowed");
    }
    if (part.size() > 255) return invalid("a path part is longer than 255 bytes");
    if (slash == std::string_view::npos) break;
    start = slash + 1;
  }
  return std::string(kDataDir) + "/" + std::string(relative);
}

Result<std::string> SandboxPath(std::string_view path) {
  if (path.find('\0') != std::string_view::npos) {
    return Fail(ErrorCode::kInvalidPath, "the path contains a NUL byte");
  }
  if (path.size() > 4096) return Fail(ErrorCode::kInvalidPath, "the path is too long");
  if (path.empty() || path == ".") return std::string(kDataDir);
  if (path.front() == '/') return std::string(path);
  return std::string(kDataDir) + "/" + std::string(path);
}

Result<FileInfo> StatReadableFile(ToolContext& context, const std::string& session_id,
                                  std::string_view path) {
  SBX_ASSIGN_OR_RETURN(std::string absolute, SandboxPath(path));
  SBX_ASSIGN_OR_RETURN(FileInfo info, context.sessions.Stat(session_id, absolute));
  if (info.is_dir) {
    return Fail(ErrorCode::kInvalidPath, "{} is a directory; list it with sandbox_list_artifacts",
                absolute);
  }
  return info;
}

uint64_t InlineReadLimit(const ToolSettings& settings) {
  return (settings.max_result_bytes - 8192) / 4 * 3;
}

ResultFile MakeResultFile(const ToolCall& call, const std::string& session_id,
                          const FileInfo& info) {
  ResultFile file;
  file.session_id = session_id;
  file.path = info.path;
  file.mime_type = info.mime_type;
  file.size = info.size;
  file.download_url = call.DownloadUrl(session_id, info.path);
  return file;
}

std::string ArtifactFilename(std::string_view path) {
  // The seed server names artifacts by their place under its output directory: the same here
  // for /mnt/data; anything elsewhere goes by its last component.
  std::string prefix = std::string(kDataDir) + "/";
  if (path.substr(0, prefix.size()) == prefix) return std::string(path.substr(prefix.size()));
  size_t slash = path.rfind('/');
  return std::string(slash == std::string_view::npos ? path : path.substr(slash + 1));
}

Json FileJson(const ResultFile& file) {
  Json json = {{"path", ValidUtf8(file.path)},
               {"filename", ValidUtf8(ArtifactFilename(file.path))},
               {"size", file.size},
               {"mime_type", file.mime_type}};
  if (!file.download_url.empty()) json["download_url"] = file.download_url;
  return json;
}

double RunTimeout(const ToolContext& context, const Json& arguments, std::string* note) {
  double maximum = context.settings.exec_timeout_s;
  auto it = arguments.find("timeout_s");
  if (it == arguments.end() || !it->is_number()) return maximum;
  double requested = it->get<double>();
  if (requested > maximum) {
    *note = fmt::format("timeout_s {} is above this server's maximum; {} s applied", requested,
                        maximum);
    return maximum;
  }
  return requested;
}

bool IsInlineImageMime(std::string_view mime) {
  return mime == "image/png" || mime == "image/jpeg" || mime == "image/gif" || mime == "image/webp";
}

}  // namespace sandbox::mcp::tools
