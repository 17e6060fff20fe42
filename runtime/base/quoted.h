// Client-supplied text quoted in an error message, cut to a bound: an error never grows with
// what the client sent (a 1 MiB session id must not come back as a 1 MiB error).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace sandbox {

// 'text' when it fits in `max_bytes`; otherwise its first bytes (cut on a UTF-8 boundary)
// followed by "…' (N bytes)". Control characters become '?', so the quote stays one line.
std::string Quoted(std::string_view text, size_t max_bytes = 64);

}  // namespace sandbox
