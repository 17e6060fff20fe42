// libcjose (with its jansson and libcrypto), loaded the first time a cjose function is called
// rather than when the program starts: only OAuth's token verification (jwk_key.h, jwt_header.h)
// uses it, and a one-shot `run` or a server without OAuth never loads it (libcrypto_on_demand.h
// says what that saves). libcjose_on_demand.cc defines the cjose_* functions this program calls,
// with cjose's own signatures (so the callers include cjose's headers as usual), forwarding to
// libcjose.so.0 opened with dlopen. When it cannot be opened, each fails as cjose's own do, its
// cjose_err saying why (CJOSE_ERR_INVALID_STATE and dlopen's message), as LibcjoseLoadError does.
#pragma once

#include <string>

namespace sandbox::mcp::auth {

// Why libcjose.so.0 could not be loaded (dlopen's message or the missing symbol), or empty when
// it was loaded or has not been needed yet.
std::string LibcjoseLoadError();

}  // namespace sandbox::mcp::auth
