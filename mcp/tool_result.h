// Building CallToolResult objects: a text block first, then images and resources, a small
// structuredContent (never base64), all within SANDBOX_MAX_RESULT_BYTES; and tool errors
// ({"error": CODE, "message": ...} with isError) in one shape for every tool.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/base/result.h"

namespace sandbox::mcp {

using Json = nlohmann::json;

// A file inside a session that a result shows or links to.
struct ResultFile {
  std::string session_id;
  std::string path;  // absolute inside the sandbox
  std::string mime_type;
  uint64_t size = 0;
  std::string download_url;  // "" when HTTP downloads are off
};

// A session file as an MCP resource, sandbox://sessions/{session_id}/files/{+path}:
// "sandbox://sessions/sess_0123456789ab/files/out/chart.png" for /mnt/data/out/chart.png,
// ".../files//tmp/x" for /tmp/x (the path percent-encoded). resources/read understands it.
std::string SandboxUri(std::string_view session_id, std::string_view path);
// The inverse: the session id and the absolute path. nullopt unless `uri` is such a URI with
// a canonical path (no empty, "." or ".." segment) and no query or fragment.
std::optional<std::pair<std::string, std::string>> ParseSandboxUri(std::string_view uri);

// Percent-encodes what is not an unreserved URI character or '/'.
std::string PercentEncodePath(std::string_view path);
// "%20" -> " " (no '+' rule: paths). nullopt for a cut or non-hex escape.
std::optional<std::string> PercentDecode(std::string_view text);

// True for MIME types whose content is text (text/*, JSON, XML, CSV, JavaScript, SVG ...).
bool IsTextMime(std::string_view mime_type);

// A file's entry of resources/read `contents` (and of an embedded resource): uri, mimeType,
// and `text` when the bytes are UTF-8 of a text type, else a base64 `blob`.
Json ResourceContents(const ResultFile& file, std::string_view bytes);

class ToolResultBuilder {
 public:
  explicit ToolResultBuilder(size_t max_bytes) : max_bytes_(max_bytes) {}

  void AddText(const std::string& text);
  // An `image` block. When the result budget cannot hold it, a note (and a resource_link when
  // `file` is given) takes its place.
  void AddImage(std::string_view bytes, std::string mime_type, std::optional<ResultFile> file);
  // An embedded `resource`: text when the bytes are UTF-8 of a text type, else a base64 blob.
  void AddEmbeddedResource(const ResultFile& file, std::string_view bytes);
  void AddResourceLink(const ResultFile& file);
  void SetStructured(Json structured) { structured_ = std::move(structured); }
  void MarkError() { is_error_ = true; }

  // The result, cut to the budget: binary blocks go first (largest first, linked in their place
  // while links fit), then the longest text blocks are shortened; each cut leaves a note saying
  // so. Linear in the number and size of blocks.
  Json Build();

 private:
  struct Block {
    Json json;
    bool binary = false;
    std::optional<ResultFile> fallback;
    std::string label;
  };
  // The result; without its blocks (only the envelope and structuredContent) to measure them.
  Json Assemble(bool with_blocks = true) const;
  static Json ResourceLinkJson(const ResultFile& file);

  // Notes for left-out blocks, each named; past that, one note counts the rest.
  static constexpr size_t kMaxNotes = 8;
  // Kept free for that counting note when links are placed.
  static constexpr size_t kSummaryReserve = 256;

  size_t max_bytes_;
  std::vector<Block> blocks_;
  Json structured_ = nullptr;
  bool is_error_ = false;
  std::vector<std::string> notes_;
};

// A tool error result: first text block "Error (CODE): message", structuredContent
// {"error": CODE, "message": message, ...extra}, isError true.
Json ToolError(ErrorCode code, std::string_view message, const Json& extra = Json::object());
Json ToolError(const Error& error, const Json& extra = Json::object());

}  // namespace sandbox::mcp
