// libcrypto (OpenSSL 3), loaded the first time one of its functions is called rather than when
// the program starts. libcrypto's 4.5 MB and its 3,400 symbol bindings cost every start of
// mcp-sandbox about 1 ms of CPU in the dynamic linker (with cjose, libcjose_on_demand.h), yet
// only image digests, hibernation's file digests, the HTTP transport's token check and download
// links, and OAuth's token verification use it: a one-shot `run` of a stored image never
// loads it. libcrypto_on_demand.cc defines the OpenSSL functions this program calls, with
// OpenSSL's own signatures (so the callers include <openssl/evp.h> and the rest as usual),
// forwarding to libcrypto.so.3 opened with dlopen. When it cannot be opened, every one of them
// fails as OpenSSL's do (null, 0; CRYPTO_memcmp: unequal) and LibcryptoLoadError says why.
#pragma once

#include <string>

namespace sandbox::crypto {

// Why libcrypto.so.3 could not be loaded (dlopen's message or the missing symbol), or empty when
// it was loaded or has not been needed yet.
std::string LibcryptoLoadError();

}  // namespace sandbox::crypto
