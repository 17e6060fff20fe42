// Unguessable identifiers (session ids, MCP session ids, download-token keys): hex from the
// kernel's CSPRNG.
#pragma once

#include <cstddef>
#include <string>

namespace sandbox {

// 2 * `bytes` lowercase hex digits from getrandom(2). getrandom without flags only blocks until
// the pool is seeded and cannot fail on a kernel this project runs on (>= 3.17); if it does
// anyway the process aborts rather than hand out a guessable id.
std::string RandomHex(size_t bytes);

}  // namespace sandbox
