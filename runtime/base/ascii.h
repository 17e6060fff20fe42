// ASCII case folding for protocol tokens (HTTP header names, Host, Origin, schemes): locale-free,
// so a server started under any LC_CTYPE compares them the same way.
#pragma once

#include <string>
#include <string_view>

namespace sandbox {

inline std::string AsciiLower(std::string_view text) {
  std::string out(text);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

}  // namespace sandbox
