// sandbox_upload_file (base64 into /mnt/data), sandbox_write_file and sandbox_read_file (text).
#include <fmt/format.h>

#include "mcp/jsonrpc.h"
#include "mcp/tools/tool_support.h"
#include "runtime/base/base64.h"
#include "runtime/base/units.h"

namespace sandbox::mcp::tools {

namespace {

Json WrittenSchema() {
  return OutputSchema({{"session_id", {{"type", "string"}}},
                       {"session_created", {{"type", "boolean"}}},
                       {"path", {{"type", "string"}}},
                       {"size", {{"type", "integer"}}},
                       {"download_url", {{"type", "string"}}}},
                      {"session_id", "path", "size"});
}

// Writes `size` bytes from `content` to `path` in the session the arguments name (or a new one).
Json WriteToSession(ToolContext& context, ToolCall& call, const Json& arguments,
                    const std::string& path, uint64_t size, const ContentSource& content,
                    bool overwrite, std::string_view verb) {
  auto session = ResolveSession(context, call, arguments);
  if (!session) return ToolError(session.error());
  Json extra = {{"session_id", session->id}};
  if (session->created) extra["session_created"] = true;
  if (auto written = context.sessions.WriteFile(session->id, path, size, content, overwrite);
      !written) {
    Error error = written.error();
    if (error.code == ErrorCode::kFileExists) {
      error.message = fmt::format("{} already exists; pass overwrite=true to replace it", path);
    }
    return ToolError(error, extra);
  }
  ToolResultBuilder result(context.settings.max_result_bytes);
  std::string url = call.DownloadUrl(session->id, path);
  std::string text =
      fmt::format("{} {} ({}) in session {}.", verb, path, FormatBytes(size), session->id);
  if (session->created) {
    text += fmt::format(" A new session was created: pass session_id \"{}\" to use the file.",
                        session->id);
  }
  result.AddText(text);
  Json structured = {{"session_id", session->id}, {"path", path}, {"size", size}};
  if (session->created) structured["session_created"] = true;
  if (!url.empty()) structured["download_url"] = url;
  result.SetStructured(std::move(structured));
  return result.Build();
}

}  // namespace

Tool MakeUploadFileTool(const ContextPtr& context) {
  Tool tool;
  tool.name = "sandbox_upload_file";
  tool.title = "Upload file";
  tool.description = fmt::format(
      "Put a file (base64 content) into a session's /mnt/data, where code can read it "
      "(e.g. pd.read_csv('/mnt/data/data.csv')).\n"
      "- Omit session_id to start a new session; use the returned session_id afterwards.\n"
      "- filename is relative to /mnt/data (subdirectories are created). An existing file is "
      "kept unless overwrite=true. At most {} per file.",
      FormatBytes(context->settings.max_upload_bytes));
  tool.input_schema = InputSchema(
      {{"filename",
        Property("string", "Name under /mnt/data, e.g. \"data.csv\" or \"in/data.csv\".",
                 {{"minLength", 1}})},
       {"content_base64",
        Property("string", "The file's bytes, base64-encoded.", {{"contentEncoding", "base64"}})},
       {"session_id", SessionIdProperty(true)},
       {"overwrite", Property("boolean", "Replace an existing file (default false).")}},
      {"filename", "content_base64"});
  // The seed server's name is content_base64; callers written for this server's first release
  // sent `content`.
  tool.argument_aliases = {{"content", "content_base64"}};
  tool.output_schema = WrittenSchema();
  tool.annotations = Annotations("Upload file", false, true, true);
  tool.handler = [context](ToolCall& call, const Json& arguments) {
    const std::string& encoded = arguments["content_base64"].get_ref<const std::string&>();
    uint64_t limit = context->settings.max_upload_bytes;
    // Refuse before decoding what cannot fit (base64 grows data by 4/3); the bound may exceed
    // the decoded size by a little, so only a clear excess is refused here.
    if (uint64_t bound = Base64DecodedSizeBound(encoded); bound > limit + limit / 64 + 1024) {
      return ToolError(
          CheckUploadSize(context->settings, bound, "the file", /*estimated=*/true).error());
    }
    auto path = UploadPath(arguments["filename"].get<std::string>());
    if (!path) return ToolError(path.error());
    // Checked whole first (no session is created for junk), then decoded straight into the
    // chunks that go to the sandbox: the decoded file is never held whole next to its text.
    auto size = Base64DecodedSize(encoded);
    if (!size) {
      return ToolError(ErrorCode::kInvalidArgument,
                       "content_base64 is not valid base64 (standard or URL-safe alphabet)");
    }
    if (auto fits = CheckUploadSize(context->settings, *size, "the file"); !fits) {
      return ToolError(fits.error());
    }
    Base64Reader reader(encoded);
    return WriteToSession(
        *context, call, arguments, *path, *size,
        [&reader](size_t max, std::string& out) { reader.Next(max, out); },
        arguments.value("overwrite", false), "Uploaded");
  };
  return tool;
}

Tool MakeWriteFileTool(const ContextPtr& context) {
  Tool tool;
  tool.name = "sandbox_write_file";
  tool.title = "Write text file";
  tool.description =
      "Write a text file (UTF-8) into a session: a path relative to /mnt/data, or absolute "
      "under /mnt/data or /tmp. Parent directories are created; an existing file is replaced "
      "unless overwrite=false. Omit session_id to start a new session. For binary data use "
      "sandbox_upload_file.";
  tool.input_schema = InputSchema(
      {{"path", Property("string", "Where to write, e.g. \"script.py\" or \"/tmp/notes.txt\".",
                         {{"minLength", 1}})},
       {"content", Property("string", "The text to write.")},
       {"session_id", SessionIdProperty(true)},
       {"overwrite", Property("boolean", "Replace an existing file (default true).")}},
      {"path", "content"});
  tool.output_schema = WrittenSchema();
  tool.annotations = Annotations("Write text file", false, true, true);
  tool.handler = [context](ToolCall& call, const Json& arguments) {
    const std::string& content = arguments["content"].get_ref<const std::string&>();
    if (auto fits = CheckUploadSize(context->settings, content.size(), "the text"); !fits) {
      return ToolError(fits.error());
    }
    auto path = SandboxPath(arguments["path"].get<std::string>());
    if (!path) return ToolError(path.error());
    size_t offset = 0;
    return WriteToSession(
        *context, call, arguments, *path, content.size(),
        [&content, &offset](size_t max, std::string& out) {
          std::string_view piece = std::string_view(content).substr(offset, max);
          out.append(piece);
          offset += piece.size();
        },
        arguments.value("overwrite", true), "Wrote");
  };
  return tool;
}

Tool MakeReadFileTool(const ContextPtr& context) {
  Tool tool;
  tool.name = "sandbox_read_file";
  tool.title = "Read text file";
  // Text appears twice in the result (text and structuredContent).
  uint64_t limit = context->settings.max_result_bytes / 2 - 4096;
  tool.description = fmt::format(
      "Read a UTF-8 text file from a session (a path relative to /mnt/data, or absolute) and "
      "return its content. At most {}; for images, binaries or larger files use "
      "sandbox_read_artifact.",
      FormatBytes(limit));
  tool.input_schema = InputSchema(
      {{"session_id", SessionIdProperty(false)},
       {"path", Property("string", "The file, e.g. \"results.csv\" or \"/tmp/log.txt\".",
                         {{"minLength", 1}})}},
      {"session_id", "path"});
  tool.output_schema = OutputSchema({{"session_id", {{"type", "string"}}},
                                     {"path", {{"type", "string"}}},
                                     {"size", {{"type", "integer"}}},
                                     {"content", {{"type", "string"}}}},
                                    {"session_id", "path", "content"});
  tool.annotations = Annotations("Read text file", true, false, true);
  tool.handler = [context, limit](ToolCall&, const Json& arguments) {
    std::string session_id = arguments["session_id"].get<std::string>();
    Json extra = SessionIdExtra(session_id);
    auto path = SandboxPath(arguments["path"].get<std::string>());
    if (!path) return ToolError(path.error(), extra);
    auto content = context->sessions.ReadFile(session_id, *path, limit);
    if (!content) {
      Error error = content.error();
      if (error.code == ErrorCode::kArtifactTooLarge) {
        error.message = fmt::format(
            "{} is larger than the {} sandbox_read_file returns; read "
            "parts of it with sandbox_run_python, or get it with "
            "sandbox_read_artifact",
            *path, FormatBytes(limit));
      }
      return ToolError(error, extra);
    }
    if (content->find('\0') != std::string::npos || ValidUtf8(*content).size() != content->size()) {
      return ToolError(ErrorCode::kInvalidArgument,
                       fmt::format("{} is not a UTF-8 text file; use sandbox_read_artifact", *path),
                       extra);
    }
    ToolResultBuilder result(context->settings.max_result_bytes);
    result.AddText(*content);
    result.SetStructured({{"session_id", session_id},
                          {"path", *path},
                          {"size", content->size()},
                          {"content", *content}});
    return result.Build();
  };
  return tool;
}

}  // namespace sandbox::mcp::tools
