// Parsing JSON that comes from outside (MCP clients, the agent's frames, image documents, the
// Docker daemon, session records) with a bound on nesting depth. Deep nesting is refused before
// nlohmann sees the text: its parser is iterative, but copying, dumping and our own checks of a
// parsed value recurse, so a value nested 100 000 deep would overflow the stack later.
#pragma once

#include <cstddef>
#include <string_view>

#include <nlohmann/json.hpp>

#include "runtime/base/result.h"

namespace sandbox {

// No MCP message, agent frame, image document or daemon answer needs more; 128 levels of
// recursion over a value take a few KiB of stack.
inline constexpr size_t kMaxJsonDepth = 128;

// Fails (kInvalidArgument) when arrays and objects in `text` nest deeper than `max_depth`. One
// linear pass that skips strings (with their escapes); it does not check the rest of the syntax.
Status CheckJsonDepth(std::string_view text, size_t max_depth = kMaxJsonDepth);

// Parses `text`, stopping where arrays and objects nest deeper than `max_depth`. Strings are
// moved out of the parser, not copied. Fails (kInvalidArgument) on deep nesting or invalid
// JSON; never throws.
Result<nlohmann::json> ParseJsonBounded(std::string_view text, size_t max_depth = kMaxJsonDepth);

}  // namespace sandbox
