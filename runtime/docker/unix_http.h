// HTTP/1.1 requests to a daemon listening on a unix socket (the Docker Engine API), with
// libcurl's CURLOPT_UNIX_SOCKET_PATH. Request bodies can be streamed from a file (image
// archives are hundreds of MiB). Thread-safe: each request uses its own curl handle.
#pragma once

#include <chrono>
#include <map>
#include <string>
#include <string_view>

#include "runtime/base/result.h"

namespace sandbox::docker {

inline constexpr const char* kDefaultDockerSocket = "/var/run/docker.sock";

// The socket path named by a DOCKER_HOST value: "unix:///path" -> "/path"; null or empty ->
// /var/run/docker.sock. Other schemes (tcp://, ssh://, npipe://) fail with kInvalidArgument:
// only a local unix socket is supported.
Result<std::string> DockerSocketPath(const char* docker_host);

// Percent-encodes everything but RFC 3986 unreserved characters (for query values).
std::string UrlEncode(std::string_view text);

struct HttpRequest {
  std::string method = "GET";
  std::string target;  // path and query: "/v1.41/containers/json?all=1"
  std::string body;    // sent as is unless upload_file is set
  std::string content_type = "application/json";
  std::string upload_file;  // stream the body from this file
  std::chrono::milliseconds timeout{120'000};
};

struct HttpResponse {
  long status = 0;
  std::map<std::string, std::string> headers;  // names lower-cased, values trimmed
  std::string body;
  // The value of a header (name in any case), or "".
  std::string Header(std::string_view name) const;
};

class UnixSocketHttp {
 public:
  explicit UnixSocketHttp(std::string socket_path);
  const std::string& socket_path() const { return socket_path_; }

  // Sends one request and reads the whole response. Transport failures (no socket, refused,
  // timeout) fail with kSandboxUnavailable; HTTP error statuses are returned, not failed.
  Result<HttpResponse> Send(const HttpRequest& request) const;

 private:
  std::string socket_path_;
};

}  // namespace sandbox::docker
