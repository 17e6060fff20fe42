#include "runtime/base/random_id.h"

#include <sys/random.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace sandbox {

std::string RandomHex(size_t bytes) {
  std::string raw(bytes, '\0');
  size_t got = 0;
  while (got < bytes) {
    ssize_t n = ::getrandom(raw.data() + got, bytes - got, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      std::fprintf(stderr, "mcp-sandbox: getrandom failed: %s\n", std::strerror(errno));
      std::abort();
    }
    got += static_cast<size_t>(n);
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(bytes * 2);
  for (unsigned char c : raw) {
    hex += kHex[c >> 4];
    hex += kHex[c & 0xf];
  }
  return hex;
}

}  // namespace sandbox
