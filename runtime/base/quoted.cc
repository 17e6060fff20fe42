#include "runtime/base/quoted.h"

#include <fmt/format.h>

#include "runtime/base/utf8.h"

namespace sandbox {

std::string Quoted(std::string_view text, size_t max_bytes) {
  std::string_view kept = Utf8Prefix(text, max_bytes);
  std::string out = "'";
  out.reserve(kept.size() + 24);
  for (size_t i = 0; i < kept.size();) {
    auto u = static_cast<unsigned char>(kept[i]);
    if (u >= 0x80) {
      int length = Utf8SequenceAt(kept, i);
      if (length < 0) {
        out += '?';
        ++i;
      } else {
        out.append(kept.substr(i, static_cast<size_t>(length)));
        i += static_cast<size_t>(length);
      }
      continue;
    }
    bool unsafe = u < 0x20 || u == 0x7F || u == '"' || u == '\\';
    out += unsafe ? '?' : static_cast<char>(u);
    ++i;
  }
  if (kept.size() < text.size()) {
    out += fmt::format("…' ({} bytes)", text.size());
  } else {
    out += '\'';
  }
  return out;
}

}  // namespace sandbox
