#include "tools/cli/run_batch_lines.h"

#include <cmath>

#include "runtime/base/base64.h"
#include "runtime/base/units.h"
#include "runtime/sandbox_layout.h"
#include "tools/cli/run_result.h"

namespace sandbox::cli {
namespace {

using nlohmann::json;

// A file's name under /mnt/data: relative, no "." or ".." part, no empty part. The agent keeps
// writes beneath the data dir anyway; this gives the line a clear error first.
Status CheckRelativePath(const std::string& path) {
  if (path.empty() || path.front() == '/') {
    return Fail(ErrorCode::kInvalidArgument, "files: '{}' must be a path relative to {}", path,
                layout::kDataDir);
  }
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find('/', start);
    if (end == std::string::npos) end = path.size();
    std::string_view part(path.data() + start, end - start);
    if (part.empty() || part == "." || part == "..") {
      return Fail(ErrorCode::kInvalidArgument,
                  "files: '{}' has an empty, '.' or '..' part; name a file under {}", path,
                  layout::kDataDir);
    }
    start = end + 1;
  }
  if (path.find('\0') != std::string::npos) {
    return Fail(ErrorCode::kInvalidArgument, "files: a name holds a NUL byte");
  }
  return {};
}

Result<std::string> FileContent(const std::string& path, const json& value) {
  if (value.is_string()) return value.get<std::string>();
  if (value.is_object() && value.size() == 1 && value.contains("base64") &&
      value["base64"].is_string()) {
    auto bytes = Base64Decode(value["base64"].get_ref<const std::string&>());
    if (!bytes) return Fail(ErrorCode::kInvalidArgument, "files: '{}': invalid base64", path);
    return std::move(*bytes);
  }
  return Fail(ErrorCode::kInvalidArgument,
              "files: '{}' must be a string or {{\"base64\": \"...\"}}", path);
}

Result<uint64_t> MemoryBytes(const json& value) {
  if (value.is_number_unsigned()) return value.get<uint64_t>();
  if (value.is_string()) {
    auto bytes = ParseBytes(value.get_ref<const std::string&>());
    if (!bytes) return Fail(ErrorCode::kInvalidArgument, "memory: {}", bytes.error().message);
    return *bytes;
  }
  return Fail(ErrorCode::kInvalidArgument, "memory must be a size such as \"256m\" or bytes");
}

}  // namespace

Result<BatchSnippet> ParseBatchLine(std::string_view text, size_t line) {
  json object = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (object.is_discarded()) return Fail(ErrorCode::kInvalidArgument, "not a JSON object");
  if (!object.is_object()) return Fail(ErrorCode::kInvalidArgument, "not a JSON object");
  BatchSnippet snippet;
  snippet.line = line;
  snippet.id = line;
  bool has_code = false;
  for (const auto& [key, value] : object.items()) {
    if (key == "id") {
      if (!value.is_string() && !value.is_number()) {
        return Fail(ErrorCode::kInvalidArgument, "id must be a string or a number");
      }
      snippet.id = value;
    } else if (key == "code") {
      if (!value.is_string()) return Fail(ErrorCode::kInvalidArgument, "code must be a string");
      snippet.code = value.get<std::string>();
      has_code = true;
    } else if (key == "shell") {
      if (!value.is_boolean()) return Fail(ErrorCode::kInvalidArgument, "shell must be a boolean");
      snippet.kind = value.get<bool>() ? RunRequest::Kind::kShell : RunRequest::Kind::kPython;
    } else if (key == "stdin") {
      if (!value.is_string()) return Fail(ErrorCode::kInvalidArgument, "stdin must be a string");
      snippet.stdin_text = value.get<std::string>();
    } else if (key == "timeout_s") {
      if (!value.is_number() || !(value.get<double>() > 0) || !std::isfinite(value.get<double>())) {
        return Fail(ErrorCode::kInvalidArgument, "timeout_s must be a number of seconds above 0");
      }
      snippet.timeout_s = value.get<double>();
    } else if (key == "memory") {
      SBX_ASSIGN_OR_RETURN(snippet.memory_bytes, MemoryBytes(value));
    } else if (key == "files") {
      if (!value.is_object()) {
        return Fail(ErrorCode::kInvalidArgument, "files must be an object of name: content");
      }
      for (const auto& [path, content] : value.items()) {
        SBX_TRY(CheckRelativePath(path));
        SBX_ASSIGN_OR_RETURN(std::string bytes, FileContent(path, content));
        snippet.files.emplace_back(path, std::move(bytes));
      }
    } else {
      return Fail(ErrorCode::kInvalidArgument,
                  "unknown field '{}' (known: id, code, shell, stdin, timeout_s, memory, files)",
                  key);
    }
  }
  if (!has_code) return Fail(ErrorCode::kInvalidArgument, "no \"code\"");
  return snippet;
}

nlohmann::json BatchLineId(std::string_view text, size_t line) {
  json object = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (object.is_object()) {
    auto id = object.find("id");
    if (id != object.end() && (id->is_string() || id->is_number())) return *id;
  }
  return line;
}

std::string BatchResultLine(const nlohmann::json& id, size_t line, const nlohmann::json& run_fields,
                            double wall_s) {
  // In a fixed order, id first, so a person reading the file finds each field in its place.
  nlohmann::ordered_json out = {{"id", id}, {"line", line}, {"ran", true}};
  auto copy = [&](const char* key) {
    if (auto it = run_fields.find(key); it != run_fields.end()) out[key] = *it;
  };
  for (const char* key : {"exit_code", "timed_out", "oom", "stdout", "stderr", "stdout_truncated",
                          "stderr_truncated", "duration_s"}) {
    copy(key);
  }
  out["wall_s"] = wall_s;
  copy("cpu_s");
  copy("memory_peak_bytes");
  copy("artifacts");
  return out.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string BatchErrorLine(const nlohmann::json& id, size_t line, const std::string& message) {
  nlohmann::ordered_json out = {{"id", id}, {"line", line}, {"ran", false}, {"error", message}};
  return out.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace sandbox::cli
