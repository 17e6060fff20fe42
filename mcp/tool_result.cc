#include "mcp/tool_result.h"

#include <algorithm>

#include <fmt/format.h>

#include "mcp/jsonrpc.h"
#include "runtime/base/base64.h"
#include "runtime/base/units.h"
#include "runtime/sandbox_layout.h"

namespace sandbox::mcp {

namespace {

bool IsUnreservedPathChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '.' || c == '_' || c == '~' || c == '/';
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

size_t JsonSize(const Json& value) { return Serialize(value).size(); }

}  // namespace

std::string PercentEncodePath(std::string_view path) {
  std::string out;
  out.reserve(path.size());
  for (char c : path) {
    if (IsUnreservedPathChar(c)) {
      out += c;
    } else {
      out += fmt::format("%{:02X}", static_cast<unsigned char>(c));
    }
  }
  return out;
}

std::optional<std::string> PercentDecode(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%') {
      out += text[i];
      continue;
    }
    if (i + 2 >= text.size()) return std::nullopt;
    int high = HexValue(text[i + 1]);
    int low = HexValue(text[i + 2]);
    if (high < 0 || low < 0) return std::nullopt;
    out += static_cast<char>(high * 16 + low);
    i += 2;
  }
  return out;
}

std::string SandboxUri(std::string_view session_id, std::string_view path) {
  // {+path} of the template is the path as sandbox_read_artifact takes it: relative to
  // /mnt/data for the files there (the usual case), else absolute (a second '/').
  const std::string data_prefix = std::string(layout::kDataDir) + "/";
  std::string uri = "sandbox://sessions/";
  uri += session_id;
  uri += "/files/";
  if (path.substr(0, data_prefix.size()) == data_prefix) path.remove_prefix(data_prefix.size());
  uri += PercentEncodePath(path);
  return uri;
}

std::optional<std::pair<std::string, std::string>> ParseSandboxUri(std::string_view uri) {
  constexpr std::string_view kPrefix = "sandbox://sessions/";
  constexpr std::string_view kFiles = "/files/";
  if (uri.substr(0, kPrefix.size()) != kPrefix) return std::nullopt;
  uri.remove_prefix(kPrefix.size());
  size_t files = uri.find(kFiles);
  if (files == std::string_view::npos || files == 0) return std::nullopt;
  std::string session(uri.substr(0, files));
  if (session.find_first_of("/?#%") != std::string::npos) return std::nullopt;
  std::string_view encoded = uri.substr(files + kFiles.size());
  if (encoded.empty() || encoded.find_first_of("?#") != std::string_view::npos) {
    return std::nullopt;
  }
  auto decoded = PercentDecode(encoded);
  if (!decoded || decoded->find('\0') != std::string::npos) return std::nullopt;
  bool absolute = decoded->front() == '/';
  // One URI per file: no empty, "." or ".." segments (so none can climb out of /mnt/data),
  // no trailing '/'.
  std::string_view rest(*decoded);
  if (absolute) rest.remove_prefix(1);
  for (size_t start = 0;;) {
    size_t end = rest.find('/', start);
    std::string_view segment = rest.substr(start, end - start);
    if (segment.empty() || segment == "." || segment == "..") return std::nullopt;
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  // The absolute spelling of a /mnt/data file is not its URI: the relative one is.
  const std::string data_prefix = std::string(layout::kDataDir) + "/";
  if (absolute && (*decoded == layout::kDataDir || decoded->rfind(data_prefix, 0) == 0)) {
    return std::nullopt;
  }
  std::string path = absolute ? std::move(*decoded) : data_prefix + *decoded;
  return std::make_pair(std::move(session), std::move(path));
}

bool IsTextMime(std::string_view mime) {
  if (mime.substr(0, 5) == "text/") return true;
  for (std::string_view text_type :
       {"application/json", "application/xml", "application/javascript", "application/x-sh",
        "application/x-python", "application/sql", "application/x-yaml", "application/yaml",
        "application/toml", "image/svg+xml", "application/x-ndjson", "application/csv"}) {
    if (mime == text_type) return true;
  }
  return mime.size() > 5 &&
         (mime.substr(mime.size() - 5) == "+json" || mime.substr(mime.size() - 4) == "+xml");
}

void ToolResultBuilder::AddText(const std::string& text) {
  Block block;
  block.json = {{"type", "text"}, {"text", ValidUtf8(text)}};
  blocks_.push_back(std::move(block));
}

void ToolResultBuilder::AddImage(std::string_view bytes, std::string mime_type,
                                 std::optional<ResultFile> file) {
  Block block;
  block.json = {{"type", "image"}, {"data", Base64Encode(bytes)}, {"mimeType", mime_type}};
  block.binary = true;
  block.label = file ? file->path : std::string("image");
  block.fallback = std::move(file);
  blocks_.push_back(std::move(block));
}

Json ResourceContents(const ResultFile& file, std::string_view bytes) {
  Json resource = {{"uri", SandboxUri(file.session_id, file.path)}};
  if (!file.mime_type.empty()) resource["mimeType"] = file.mime_type;
  if (IsTextMime(file.mime_type) && ValidUtf8(bytes).size() == bytes.size()) {
    resource["text"] = std::string(bytes);
  } else {
    resource["blob"] = Base64Encode(bytes);
  }
  return resource;
}

void ToolResultBuilder::AddEmbeddedResource(const ResultFile& file, std::string_view bytes) {
  Block block;
  block.json = {{"type", "resource"}, {"resource", ResourceContents(file, bytes)}};
  block.binary = true;
  block.label = file.path;
  block.fallback = file;
  blocks_.push_back(std::move(block));
}

void ToolResultBuilder::AddResourceLink(const ResultFile& file) {
  Block block;
  block.json = ResourceLinkJson(file);
  blocks_.push_back(std::move(block));
}

Json ToolResultBuilder::ResourceLinkJson(const ResultFile& file) {
  std::string name = file.path.substr(file.path.rfind('/') + 1);
  Json link = {{"type", "resource_link"},
               {"uri", SandboxUri(file.session_id, file.path)},
               {"name", ValidUtf8(name.empty() ? file.path : name)},
               {"size", file.size}};
  if (!file.mime_type.empty()) link["mimeType"] = file.mime_type;
  std::string description = ValidUtf8(file.path);
  if (!file.download_url.empty()) description += " — download: " + file.download_url;
  link["description"] = description;
  return link;
}

Json ToolResultBuilder::Assemble(bool with_blocks) const {
  Json content = Json::array();
  if (with_blocks) {
    for (const auto& block : blocks_) content.push_back(block.json);
  }
  if (!notes_.empty()) {
    std::string notes;
    for (const auto& note : notes_) notes += "\n" + note;
    if (!content.empty() && content[0]["type"] == "text") {
      content[0]["text"] = content[0]["text"].get<std::string>() + "\n" + notes;
    } else {
      content.insert(content.begin(), Json{{"type", "text"}, {"text", notes.substr(1)}});
    }
  }
  Json result = {{"content", std::move(content)}};
  if (!structured_.is_null()) result["structuredContent"] = structured_;
  if (is_error_) result["isError"] = true;
  return result;
}

Json ToolResultBuilder::Build() {
  // Sizes are measured once and kept up to date by arithmetic: a result with thousands of
  // blocks (a cell can forge its figure list) is decided in one pass, never by serialising the
  // whole result again after each change.
  std::vector<size_t> sizes(blocks_.size());
  size_t total = JsonSize(Assemble(/*with_blocks=*/false));
  for (size_t i = 0; i < blocks_.size(); ++i) {
    sizes[i] = JsonSize(blocks_[i].json) + 1;  // and its comma
    total += sizes[i];
  }
  // 1. Binary blocks, largest first, are left out until the rest fits. Each gets a note, up to
  // kMaxNotes; the rest are counted in one.
  std::vector<size_t> binary;
  for (size_t i = 0; i < blocks_.size(); ++i) {
    if (blocks_[i].binary) binary.push_back(i);
  }
  // Of equal sizes the later block goes first: the first figures of a run are the ones kept.
  std::sort(binary.begin(), binary.end(),
            [&](size_t a, size_t b) { return sizes[a] != sizes[b] ? sizes[a] > sizes[b] : a > b; });
  std::vector<size_t> dropped;
  size_t unnoted = 0;
  for (size_t index : binary) {
    if (total <= max_bytes_) break;
    total -= sizes[index];
    dropped.push_back(index);
    if (notes_.size() < kMaxNotes) {
      const Block& block = blocks_[index];
      notes_.push_back(fmt::format(
          "[{} ({} encoded) left out: the result limit is {} (SANDBOX_MAX_RESULT_BYTES){}]",
          ValidUtf8(Utf8Prefix(block.label, 256)), FormatBytes(sizes[index] - 1),
          FormatBytes(max_bytes_),
          block.fallback ? "; read it with sandbox_read_artifact or its download_url" : ""));
      total += JsonSize(Json(notes_.back())) + 1;
    } else {
      ++unnoted;
    }
  }
  // 2. A left-out file is linked in its place while links fit (a link is small but not free);
  // the others are only counted.
  size_t unlinked = 0;
  for (size_t index : dropped) {
    Block& block = blocks_[index];
    std::optional<ResultFile> fallback = std::move(block.fallback);
    block = Block{};
    sizes[index] = 0;
    if (!fallback) continue;
    Json link = ResourceLinkJson(*fallback);
    size_t link_size = JsonSize(link) + 1;
    if (total + link_size + kSummaryReserve > max_bytes_) {
      ++unlinked;
      continue;
    }
    block.json = std::move(link);
    sizes[index] = link_size;
    total += link_size;
  }
  if (!dropped.empty()) {
    blocks_.erase(std::remove_if(blocks_.begin(), blocks_.end(),
                                 [](const Block& block) { return block.json.is_null(); }),
                  blocks_.end());
  }
  if (unnoted > 0 || unlinked > 0) {
    notes_.push_back(fmt::format(
        "[{} more file(s) left out{}: the result limit is {} (SANDBOX_MAX_RESULT_BYTES); "
        "sandbox_list_artifacts lists them]",
        unnoted, unlinked > 0 ? fmt::format(", {} without a link", unlinked) : std::string(),
        FormatBytes(max_bytes_)));
  }
  Json result = Assemble();
  size_t size = JsonSize(result);
  // 3. The longest text blocks are shortened (a few rounds at most, each one serialisation).
  for (int round = 0; round < 8 && size > max_bytes_; ++round) {
    size_t longest = blocks_.size();
    size_t longest_size = 0;
    for (size_t i = 0; i < blocks_.size(); ++i) {
      if (blocks_[i].json["type"] != "text") continue;
      size_t text_size = blocks_[i].json["text"].get_ref<const std::string&>().size();
      if (text_size > longest_size) {
        longest = i;
        longest_size = text_size;
      }
    }
    if (longest == blocks_.size() || longest_size < 64) break;
    const std::string& text = blocks_[longest].json["text"].get_ref<const std::string&>();
    size_t over = size - max_bytes_;
    // Escaping can make JSON larger than the text: cut a margin more than the overflow.
    size_t keep = longest_size > over + 256 ? longest_size - over - 256 : 0;
    std::string cut(Utf8Prefix(text, keep));
    cut += fmt::format("\n[… {} cut: the result limit is {} (SANDBOX_MAX_RESULT_BYTES)]",
                       FormatBytes(longest_size - cut.size()), FormatBytes(max_bytes_));
    blocks_[longest].json["text"] = std::move(cut);
    result = Assemble();
    size = JsonSize(result);
  }
  // 4. A structuredContent too large on its own: long strings in it are shortened.
  if (size > max_bytes_ && structured_.is_object()) {
    for (auto& [key, value] : structured_.items()) {
      if (value.is_string() && value.get_ref<const std::string&>().size() > 1024) {
        value = std::string(Utf8Prefix(value.get_ref<const std::string&>(), 1024)) + " [… cut]";
      }
    }
    result = Assemble();
  }
  return result;
}

Json ToolError(ErrorCode code, std::string_view message, const Json& extra) {
  std::string code_name(ErrorCodeName(code));
  std::string clean = ValidUtf8(message);
  Json structured = {{"error", code_name}, {"message", clean}};
  if (extra.is_object()) {
    for (const auto& [key, value] : extra.items()) {
      if (key != "error" && key != "message") structured[key] = value;
    }
  }
  return Json{
      {"content", Json::array({Json{{"type", "text"},
                                    {"text", fmt::format("Error ({}): {}", code_name, clean)}}})},
      {"structuredContent", std::move(structured)},
      {"isError", true}};
}

Json ToolError(const Error& error, const Json& extra) {
  if (error.details.empty()) return ToolError(error.code, error.message, extra);
  Json merged = extra.is_object() ? extra : Json::object();
  for (const auto& [key, value] : error.details) merged[key] = ValidUtf8(value);
  return ToolError(error.code, error.message, merged);
}

}  // namespace sandbox::mcp
