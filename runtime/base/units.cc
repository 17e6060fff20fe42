#include "runtime/base/units.h"

#include <cctype>
#include <charconv>
#include <limits>

namespace sandbox {

Result<uint64_t> ParseBytes(std::string_view text) {
  std::string_view digits = text;
  size_t end = 0;
  while (end < digits.size() && std::isdigit(static_cast<unsigned char>(digits[end])) != 0) ++end;
  if (end == 0) {
    return Fail(ErrorCode::kInvalidArgument, "'{}' is not a size (e.g. 512m, 1g, 4096)", text);
  }
  uint64_t value = 0;
  auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + end, value);
  if (ec != std::errc()) {
    return Fail(ErrorCode::kInvalidArgument, "'{}' is not a size (e.g. 512m, 1g, 4096)", text);
  }
  std::string suffix;
  for (char c : digits.substr(end))
    suffix += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  unsigned shift = 0;
  if (!suffix.empty()) {
    switch (suffix[0]) {
      case 'k':
        shift = 10;
        break;
      case 'm':
        shift = 20;
        break;
      case 'g':
        shift = 30;
        break;
      case 't':
        shift = 40;
        break;
      case 'b':
        shift = 0;
        break;
      default:
        return Fail(ErrorCode::kInvalidArgument, "'{}' has an unknown size suffix (use k, m, g)",
                    text);
    }
    std::string_view rest = std::string_view(suffix).substr(1);  // after k/m/g/t/b
    if (suffix[0] != 'b' && !(rest.empty() || rest == "b" || rest == "ib")) {
      return Fail(ErrorCode::kInvalidArgument, "'{}' has an unknown size suffix (use k, m, g)",
                  text);
    }
    if (suffix[0] == 'b' && !rest.empty()) {
      return Fail(ErrorCode::kInvalidArgument, "'{}' has an unknown size suffix (use k, m, g)",
                  text);
    }
  }
  if (shift > 0 && value > (std::numeric_limits<uint64_t>::max() >> shift)) {
    return Fail(ErrorCode::kInvalidArgument, "'{}' is too large", text);
  }
  return value << shift;
}

std::string FormatBytes(uint64_t bytes) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int unit = 0;
  double value = static_cast<double>(bytes);
  while (value >= 1024 && unit < 4) {
    value /= 1024;
    ++unit;
  }
  if (unit == 0) return fmt::format("{}B", bytes);
  if (value == static_cast<double>(static_cast<uint64_t>(value))) {
    return fmt::format("{}{}", static_cast<uint64_t>(value), kUnits[unit]);
  }
  return fmt::format("{:.1f}{}", value, kUnits[unit]);
}

}  // namespace sandbox
