// libcurl, loaded the first time a curl function is called rather than when the program starts.
// libcurl and the 26 libraries it pulls in (TLS, Kerberos, LDAP, SSH, RTMP, IDN ...) cost every
// start of mcp-sandbox about 4 ms of CPU in the dynamic linker, yet only the Docker backend's
// Engine API client and the JWKS fetch of OAuth use it: a one-shot `run` on the namespace
// backend, a CLI command or a server without either never loads it. libcurl_on_demand.cc
// defines the curl_* functions this program calls, with libcurl's own signatures (so the
// callers include <curl/curl.h> as usual), forwarding to libcurl.so.4 opened with dlopen.
// When it cannot be opened, curl_easy_init returns null and LibcurlLoadError says why.
#pragma once

#include <string>

namespace sandbox::docker {

// Why libcurl.so.4 could not be loaded (dlopen's message or the missing symbol), or empty when
// it was loaded or has not been needed yet.
std::string LibcurlLoadError();

}  // namespace sandbox::docker
