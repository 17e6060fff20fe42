// Session files as MCP resources: the template sandbox://sessions/{session_id}/files/{+path},
// resources/read through the same code path and limits as sandbox_read_artifact, resources/list
// of the files under /mnt/data of the live sessions, completion of the template's arguments,
// and the versions resources/subscribe compares after each tool call.
#include <algorithm>

#include <fmt/format.h>

#include "mcp/jsonrpc.h"
#include "mcp/resources.h"
#include "mcp/tools/tool_support.h"
#include "runtime/base/units.h"

namespace sandbox::mcp {

namespace {

constexpr char kTemplate[] = "sandbox://sessions/{session_id}/files/{+path}";
// resources/list: a page, and the files of one session it looks at (the first by path).
constexpr size_t kPageSize = 100;
constexpr size_t kMaxFilesPerSession = 1000;

// The path of a /mnt/data file relative to /mnt/data ("out/chart.png").
std::string RelativeToData(const std::string& path) {
  std::string prefix = std::string(tools::kDataDir) + "/";
  return path.rfind(prefix, 0) == 0 ? path.substr(prefix.size()) : path;
}

class SessionFileResources : public ResourceProvider {
 public:
  SessionFileResources(SessionManager& sessions, const ToolSettings& settings)
      : context_{sessions, settings} {}

  Json Templates() override {
    return Json::array(
        {Json{{"uriTemplate", kTemplate},
              {"name", "session-file"},
              {"title", "A file in a sandbox session"},
              {"description",
               "A file of an open session: path is relative to /mnt/data (uploads and what "
               "code wrote), or absolute under /tmp. Tool results link to these URIs."}}});
  }

  Result<Json> Read(const std::string& uri) override {
    SBX_ASSIGN_OR_RETURN(auto file, Parse(uri));
    const auto& [session_id, path] = file;
    SBX_ASSIGN_OR_RETURN(FileInfo info, tools::StatReadableFile(context_, session_id, path));
    uint64_t limit = tools::InlineReadLimit(context_.settings);
    if (info.size > limit) {
      return Fail(ErrorCode::kArtifactTooLarge,
                  "{} has {}; resources are read up to {} (SANDBOX_MAX_RESULT_BYTES); over "
                  "HTTP, download it from /files/",
                  info.path, FormatBytes(info.size), FormatBytes(limit));
    }
    SBX_ASSIGN_OR_RETURN(std::string content,
                         context_.sessions.ReadFile(session_id, info.path, limit));
    ResultFile result{session_id, info.path, info.mime_type, content.size(), ""};
    return Json::array({ResourceContents(result, content)});
  }

  Result<ResourcePage> List(const std::string& cursor) override {
    // The position is "session_id/relative path" of the last resource handed out: sessions
    // and files are listed in order, so the next page starts after it however the set changed.
    std::string after_session, after_path;
    if (!cursor.empty()) {
      auto position = DecodeCursor(cursor);
      size_t slash = position ? position->find('/') : std::string::npos;
      if (slash == std::string::npos) return Fail(ErrorCode::kInvalidArgument, "unknown cursor");
      after_session = position->substr(0, slash);
      after_path = position->substr(slash + 1);
    }
    auto sessions = context_.sessions.List();
    std::sort(sessions.begin(), sessions.end(),
              [](const SessionInfo& a, const SessionInfo& b) { return a.id < b.id; });
    ResourcePage page;
    for (const auto& session : sessions) {
      if (session.id < after_session) continue;
      // A hibernated session is not woken (a sandbox started) just to list its files.
      if (session.state == "hibernated") continue;
      // A busy session (a run in flight) cannot be listed now; it is skipped, not waited for.
      auto entries = context_.sessions.ListFiles(session.id, std::string(tools::kDataDir), true);
      if (!entries) continue;
      std::vector<const FileInfo*> files;
      for (const auto& entry : *entries) {
        if (!entry.is_dir) files.push_back(&entry);
      }
      std::sort(files.begin(), files.end(),
                [](const FileInfo* a, const FileInfo* b) { return a->path < b->path; });
      if (files.size() > kMaxFilesPerSession) files.resize(kMaxFilesPerSession);
      for (const FileInfo* info : files) {
        std::string relative = RelativeToData(info->path);
        if (session.id == after_session && relative <= after_path) continue;
        if (page.resources.size() == kPageSize) {
          page.next_cursor = EncodeCursor(after_session + "/" + after_path);
          return page;
        }
        std::string name = info->path.substr(info->path.rfind('/') + 1);
        page.resources.push_back(
            {{"uri", SandboxUri(session.id, info->path)},
             {"name", ValidUtf8(name)},
             {"title", ValidUtf8(info->path)},
             {"description", fmt::format("{} in session {}", ValidUtf8(info->path), session.id)},
             {"mimeType", info->mime_type},
             {"size", info->size}});
        after_session = session.id;
        after_path = relative;
      }
    }
    return page;
  }

  Result<CompletionValues> Complete(const std::string& uri_template, const std::string& argument,
                                    const std::string& prefix, const Json& context) override {
    if (uri_template != kTemplate) {
      return Fail(ErrorCode::kInvalidArgument, "no resource template {}",
                  Utf8Prefix(uri_template, 200));
    }
    std::vector<std::string> candidates;
    if (argument == "session_id") {
      for (const auto& session : context_.sessions.List()) candidates.push_back(session.id);
    } else if (argument == "path") {
      // Paths need the session: without a known one there is nothing to offer.
      std::string session_id;
      if (context.is_object() && context.contains("session_id") &&
          context["session_id"].is_string()) {
        session_id = context["session_id"].get<std::string>();
      }
      if (session_id.empty()) return CompletionValues{};
      auto entries = context_.sessions.ListFiles(session_id, std::string(tools::kDataDir), true);
      if (!entries) return CompletionValues{};
      for (const auto& entry : *entries) {
        std::string relative = RelativeToData(entry.path);
        candidates.push_back(entry.is_dir ? relative + "/" : relative);
      }
    } else {
      return Fail(ErrorCode::kInvalidArgument, "the template has no argument {}",
                  Utf8Prefix(argument, 100));
    }
    std::sort(candidates.begin(), candidates.end());
    CompletionValues completion;
    for (auto& candidate : candidates) {
      if (candidate.rfind(prefix, 0) != 0) continue;
      ++completion.total;
      if (completion.values.size() < kMaxCompletionValues) {
        completion.values.push_back(std::move(candidate));
      }
    }
    completion.has_more = completion.total > completion.values.size();
    return completion;
  }

  Result<std::string> Version(const std::string& uri) override {
    SBX_ASSIGN_OR_RETURN(auto file, Parse(uri));
    auto info = context_.sessions.Stat(file.first, file.second);
    if (!info) {
      if (info.error().code == ErrorCode::kNotFound) return std::string();
      return Fail(info.error());
    }
    // The agent reports size and mtime (ms); a rewrite within the same millisecond to the
    // same size goes unseen.
    return fmt::format("{}:{}:{}", info->is_dir ? "d" : "f", info->size, info->mtime_ms);
  }

 private:
  static Result<std::pair<std::string, std::string>> Parse(const std::string& uri) {
    auto parsed = ParseSandboxUri(uri);
    if (!parsed) {
      return Fail(ErrorCode::kInvalidArgument,
                  "not a session file URI ({}, the path relative to /mnt/data, without \".\" "
                  "or \"..\" segments)",
                  kTemplate);
    }
    return *parsed;
  }

  tools::ToolContext context_;
};

}  // namespace

std::shared_ptr<ResourceProvider> SandboxResources(SessionManager& sessions,
                                                   const ToolSettings& settings) {
  return std::make_shared<SessionFileResources>(sessions, settings);
}

}  // namespace sandbox::mcp
