#include "mcp/http_options.h"

#include <fmt/format.h>

#include "mcp/public_url.h"
#include "runtime/base/ascii.h"

namespace sandbox::mcp {

bool IsWildcardAddress(std::string_view host) {
  return host == "0.0.0.0" || host == "::" || host == "[::]" || host.empty();
}

std::string ListeningAuthority(const std::string& host, int port) {
  std::string authority = host.find(':') != std::string::npos ? "[" + host + "]" : host;
  return authority + ":" + std::to_string(port);
}

HttpAdmissionPolicy AdmissionPolicyFor(const HttpOptions& options, int bound_port) {
  HttpAdmissionPolicy policy;
  policy.auth_tokens = options.auth_tokens;
  policy.max_body_bytes = options.max_body_bytes;
  for (const auto& origin : options.allowed_origins) {
    if (origin == "*") {
      policy.any_host = true;
      policy.origins.push_back("*");
      continue;
    }
    policy.origins.push_back(AsciiLower(origin));
    size_t scheme = origin.find("://");
    policy.hosts.push_back(
        HostName(scheme == std::string::npos ? origin : origin.substr(scheme + 3)));
  }
  if (options.allowed_origins.empty()) {
    for (const char* name : {"localhost", "127.0.0.1", "[::1]"}) {
      policy.origins.push_back(fmt::format("http://{}:{}", name, bound_port));
    }
    // Remote clients reach us under names we cannot know: the Host check cannot hold.
    if (IsWildcardAddress(options.host)) policy.any_host = true;
  }
  // Behind a proxy the client's Host is the public one, which the operator named.
  if (std::string public_host = PublicUrlHost(options.public_url); !public_host.empty()) {
    policy.hosts.push_back(HostName(public_host));
  }
  if (!IsWildcardAddress(options.host)) {
    policy.hosts.push_back(
        AsciiLower(options.host.find(':') != std::string::npos && options.host.front() != '['
                       ? "[" + options.host + "]"
                       : options.host));
  }
  return policy;
}

std::string DefaultResourceId(const HttpOptions& options, int bound_port) {
  if (!options.public_url.empty()) return options.public_url + "/mcp";
  return fmt::format("http://{}:{}/mcp",
                     IsWildcardAddress(options.host) ? "127.0.0.1" : options.host, bound_port);
}

}  // namespace sandbox::mcp
