// The one way text someone else wrote (a client's argument, a sandbox's request, an exception's
// message) is echoed back, in an error message, a tool result or a log line: quoted and cut to a
// bound, so nothing echoed grows with what was sent (a 1 MiB session id must not come back as a
// 1 MiB error, nor as a 1 MiB log line).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace sandbox {

// 'text' when it fits in `max_bytes`; otherwise its first bytes (cut on a UTF-8 boundary)
// followed by "…' (N bytes)". The quote is one line of valid UTF-8 that can sit inside a JSON
// string as it is (SANDBOX_LOG_FORMAT=json writes messages unescaped): control characters,
// '"', '\' and bytes that are not UTF-8 become '?'.
std::string Quoted(std::string_view text, size_t max_bytes = 64);

}  // namespace sandbox
