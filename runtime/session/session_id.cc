#include "runtime/session/session_id.h"

#include "runtime/base/random_id.h"
#include "runtime/sandbox_layout.h"

namespace sandbox {

std::string NewSessionId() {
  return layout::kSessionIdPrefix + RandomHex(layout::kSessionIdHexDigits / 2);
}

bool IsValidSessionId(std::string_view id) {
  std::string_view prefix = layout::kSessionIdPrefix;
  if (id.size() != prefix.size() + layout::kSessionIdHexDigits ||
      id.substr(0, prefix.size()) != prefix) {
    return false;
  }
  for (char c : id.substr(prefix.size())) {
    bool hex = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
    if (!hex) return false;
  }
  return true;
}

}  // namespace sandbox
