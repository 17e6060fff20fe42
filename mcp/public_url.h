// Where download links point. Behind a proxy (TLS, a path prefix, a router in front of several
// replicas) the request's Host says nothing about the scheme or prefix clients use, so an
// operator names the public address (SANDBOX_PUBLIC_URL); without it links are http:// and the
// Host the client sent, as a server reached directly is. Socket-free.
#pragma once

#include <string>
#include <string_view>

#include "runtime/base/result.h"

namespace sandbox::mcp {

// SANDBOX_PUBLIC_URL checked and normalized: "http[s]://host[:port][/prefix]" (scheme
// lower-cased, no trailing '/'), or "" for "". kInvalidArgument for another scheme, user info,
// a query or fragment, spaces or control characters, or no host.
Result<std::string> ParsePublicUrl(std::string_view value);

// The host[:port] of a normalized public URL ("" for "").
std::string PublicUrlHost(std::string_view public_url);

// The base of download links: `public_url` when set, else "http://" + the request's Host, else
// "http://" + `listening` (host:port) when the request had none (HTTP/1.0).
std::string DownloadBaseUrl(std::string_view public_url, std::string_view host_header,
                            std::string_view listening);

}  // namespace sandbox::mcp
