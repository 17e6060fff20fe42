#include "runtime/base/time_format.h"

namespace sandbox {

std::string Rfc3339Utc(std::time_t seconds) {
  std::tm utc{};
  ::gmtime_r(&seconds, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

std::string NowRfc3339() { return Rfc3339Utc(std::time(nullptr)); }

}  // namespace sandbox
