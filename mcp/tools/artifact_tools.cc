// sandbox_read_artifact (any file back: images as image content, others as embedded resources,
// links when too large) and sandbox_list_artifacts.
#include <fmt/format.h>

#include "mcp/jsonrpc.h"
#include "mcp/tools/tool_support.h"
#include "runtime/base/time_format.h"
#include "runtime/base/units.h"

namespace sandbox::mcp::tools {

namespace {
constexpr size_t kMaxListed = 1000;
}  // namespace

Tool MakeReadArtifactTool(const ContextPtr& context) {
  Tool tool;
  tool.name = "sandbox_read_artifact";
  tool.title = "Read artifact";
  uint64_t limit = InlineReadLimit(context->settings);
  tool.description = fmt::format(
      "Get a file from a session (a path relative to /mnt/data, or absolute): images come "
      "back as images, text and other files as embedded resources. Files above {} come back "
      "as a link (with a download_url when the server runs over HTTP).",
      FormatBytes(limit));
  tool.input_schema = InputSchema(
      {{"session_id", SessionIdProperty(false)},
       {"path", Property("string", "The file, e.g. \"chart.png\" or \"/mnt/data/out/report.pdf\".",
                         {{"minLength", 1}})}},
      {"session_id", "path"});
  tool.output_schema = OutputSchema({{"session_id", {{"type", "string"}}},
                                     {"path", {{"type", "string"}}},
                                     {"filename", {{"type", "string"}}},
                                     {"size", {{"type", "integer"}}},
                                     {"mime_type", {{"type", "string"}}},
                                     {"uri", {{"type", "string"}}},
                                     {"download_url", {{"type", "string"}}},
                                     {"embedded", {{"type", "boolean"}}}},
                                    {"session_id", "path", "size", "mime_type"});
  tool.annotations = Annotations("Read artifact", true, false, true);
  tool.handler = [context, limit](ToolCall& call, const Json& arguments) {
    std::string session_id = arguments["session_id"].get<std::string>();
    Json extra = SessionIdExtra(session_id);
    auto info = StatReadableFile(*context, session_id, arguments["path"].get<std::string>());
    if (!info) return ToolError(info.error(), extra);
    ResultFile file = MakeResultFile(call, session_id, *info);
    Json structured = FileJson(file);
    structured["session_id"] = session_id;
    structured["uri"] = SandboxUri(session_id, file.path);
    ToolResultBuilder result(context->settings.max_result_bytes);
    if (info->size > limit) {
      if (file.download_url.empty()) {
        return ToolError(ErrorCode::kArtifactTooLarge,
                         fmt::format("{} has {}; results are limited to {} "
                                     "(SANDBOX_MAX_RESULT_BYTES). Reduce it with "
                                     "sandbox_run_python (resize, compress, split), or run the "
                                     "server over HTTP to download it.",
                                     file.path, FormatBytes(info->size), FormatBytes(limit)),
                         extra);
      }
      result.AddText(fmt::format("{} ({}, {}) is too large to return inline; download it: {}",
                                 file.path, FormatBytes(info->size), file.mime_type,
                                 file.download_url));
      result.AddResourceLink(file);
      structured["embedded"] = false;
      result.SetStructured(std::move(structured));
      return result.Build();
    }
    auto content = context->sessions.ReadFile(session_id, file.path, limit);
    if (!content) return ToolError(content.error(), extra);
    file.size = content->size();
    std::string text =
        fmt::format("{} ({}, {})", file.path, FormatBytes(file.size), file.mime_type);
    if (!file.download_url.empty()) text += "\ndownload_url: " + file.download_url;
    result.AddText(text);
    if (IsInlineImageMime(file.mime_type)) {
      result.AddImage(*content, file.mime_type, file);
    } else {
      result.AddEmbeddedResource(file, *content);
    }
    structured["size"] = file.size;
    structured["embedded"] = true;
    result.SetStructured(std::move(structured));
    return result.Build();
  };
  return tool;
}

Tool MakeListArtifactsTool(const ContextPtr& context) {
  Tool tool;
  tool.name = "sandbox_list_artifacts";
  tool.title = "List artifacts";
  tool.description =
      "List the files of a session under /mnt/data (or a sub-path), with size, MIME type and "
      "modification time: uploads and everything code wrote there. Read one with "
      "sandbox_read_artifact.";
  tool.input_schema = InputSchema(
      {{"session_id", SessionIdProperty(false)},
       {"path",
        Property("string", "Directory to list, relative to /mnt/data (default: /mnt/data).")},
       {"recursive", Property("boolean", "Include subdirectories (default true).")}},
      {"session_id"});
  Json entry = {{"type", "object"},
                {"properties",
                 {{"path", {{"type", "string"}}},
                  {"filename", {{"type", "string"}}},
                  {"size", {{"type", "integer"}}},
                  {"mime_type", {{"type", "string"}}},
                  {"modified", {{"type", "string"}}},
                  {"is_dir", {{"type", "boolean"}}},
                  {"download_url", {{"type", "string"}}}}}};
  tool.output_schema = OutputSchema({{"session_id", {{"type", "string"}}},
                                     {"path", {{"type", "string"}}},
                                     {"files", {{"type", "array"}, {"items", entry}}},
                                     {"truncated", {{"type", "boolean"}}}},
                                    {"session_id", "path", "files"});
  tool.annotations = Annotations("List artifacts", true, false, true);
  tool.handler = [context](ToolCall& call, const Json& arguments) {
    std::string session_id = arguments["session_id"].get<std::string>();
    Json extra = SessionIdExtra(session_id);
    auto path = SandboxPath(arguments.value("path", std::string()));
    if (!path) return ToolError(path.error(), extra);
    auto entries =
        context->sessions.ListFiles(session_id, *path, arguments.value("recursive", true));
    if (!entries) return ToolError(entries.error(), extra);
    Json files = Json::array();
    std::string text;
    size_t file_count = 0;
    uint64_t total = 0;
    for (const auto& info : *entries) {
      if (files.size() >= kMaxListed) break;
      ResultFile file = MakeResultFile(call, session_id, info);
      Json json = FileJson(file);
      json["modified"] = Rfc3339Utc(static_cast<std::time_t>(info.mtime_ms / 1000));
      if (info.is_dir) {
        json["is_dir"] = true;
        json.erase("download_url");
        text += fmt::format("  {}/\n", ValidUtf8(info.path));
      } else {
        ++file_count;
        total += info.size;
        text +=
            fmt::format("  {}  {}  {}  {}\n", ValidUtf8(info.path), FormatBytes(info.size),
                        info.mime_type, Rfc3339Utc(static_cast<std::time_t>(info.mtime_ms / 1000)));
      }
      files.push_back(std::move(json));
    }
    bool truncated = entries->size() > kMaxListed;
    std::string header = fmt::format("{} file(s), {} in {} (session {})", file_count,
                                     FormatBytes(total), *path, session_id);
    if (entries->empty()) header += ": empty";
    if (truncated) {
      header += fmt::format("; only the first {} entries are listed", kMaxListed);
    }
    ToolResultBuilder result(context->settings.max_result_bytes);
    result.AddText(header + (text.empty() ? "" : ":\n" + text));
    result.SetStructured({{"session_id", session_id},
                          {"path", *path},
                          {"files", std::move(files)},
                          {"truncated", truncated}});
    return result.Build();
  };
  return tool;
}

}  // namespace sandbox::mcp::tools
