// The line format of `mcp-sandbox run --batch` (docs/ci.md "Batch runs"): one snippet per input
// line, one result per output line. Parsing never throws: a bad line becomes an error that
// names the line and the field, and the batch goes on.
//
// A snippet line is a JSON object:
//   {"id": "t1",                 optional, any JSON scalar; default: the line number
//    "code": "print(1)",         Python, or a shell command line with "shell": true
//    "shell": false,
//    "stdin": "text",            optional: what the snippet reads on standard input
//    "timeout_s": 5,             optional, at most the batch's --timeout
//    "memory": "256m",           optional (a size or a number of bytes), at most --memory
//    "files": {"in.csv": "a,b"}} optional: put in /mnt/data before the run; a value may be
//                                {"base64": "..."} for bytes
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/base/result.h"
#include "runtime/run.h"

namespace sandbox::cli {

struct BatchSnippet {
  size_t line = 0;    // 1-based line of the input
  nlohmann::json id;  // the line's "id", else its line number
  RunRequest::Kind kind = RunRequest::Kind::kPython;
  std::string code;
  std::optional<std::string> stdin_text;
  std::optional<double> timeout_s;
  std::optional<uint64_t> memory_bytes;
  std::vector<std::pair<std::string, std::string>> files;  // relative path, content
};

// Parses one input line. kInvalidArgument naming the field when the line is not a snippet.
Result<BatchSnippet> ParseBatchLine(std::string_view text, size_t line);

// The id to report for `text` when it failed to parse: its "id" where one can be read, else
// the line number.
nlohmann::json BatchLineId(std::string_view text, size_t line);

// One output line (no newline) for a snippet that ran: {"id", "line", "ran": true, ...the
// fields of RunResultJson..., "wall_s", "cpu_s", "memory_peak_bytes"}, from `run_fields`;
// wall_s counts the sandbox's start and files too.
std::string BatchResultLine(const nlohmann::json& id, size_t line, const nlohmann::json& run_fields,
                            double wall_s);

// One output line for a snippet that did not run (a bad line, a sandbox that would not start):
// {"id", "line", "ran": false, "error": message}.
std::string BatchErrorLine(const nlohmann::json& id, size_t line, const std::string& message);

}  // namespace sandbox::cli
