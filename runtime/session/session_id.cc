#include "runtime/session/session_id.h"

#include <sys/random.h>

#include <cstdint>

namespace sandbox {

std::string NewSessionId() {
  uint8_t bytes[6];
  size_t got = 0;
  while (got < sizeof bytes) {
    ssize_t n = ::getrandom(bytes + got, sizeof bytes - got, 0);
    if (n > 0) got += static_cast<size_t>(n);
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string id = "sess_";
  for (uint8_t b : bytes) {
    id += kHex[b >> 4];
    id += kHex[b & 0xf];
  }
  return id;
}

bool IsValidSessionId(std::string_view id) {
  if (id.size() != 17 || id.substr(0, 5) != "sess_") return false;
  for (char c : id.substr(5)) {
    bool hex = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
    if (!hex) return false;
  }
  return true;
}

}  // namespace sandbox
