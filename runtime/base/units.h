// Human sizes and durations for flags and environment variables: "512m", "1g", "100k", "1024".
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "runtime/base/result.h"

namespace sandbox {

// Parses a byte size: a whole number with an optional suffix k, m, g, t (powers of 1024,
// case-insensitive, optional trailing "b"/"ib": "512m", "512MiB", "1g", "4096").
Result<uint64_t> ParseBytes(std::string_view text);

// "512MiB", "1GiB", "1.5GiB", "100KiB", "17B".
std::string FormatBytes(uint64_t bytes);

}  // namespace sandbox
