#include "runtime/docker/unix_http.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <memory>
#include <mutex>

#include <curl/curl.h>

#include "runtime/base/ascii.h"
#include "runtime/base/fd.h"
#include "runtime/docker/libcurl_on_demand.h"

namespace sandbox::docker {
namespace {

struct CurlDeleter {
  void operator()(CURL* curl) const { curl_easy_cleanup(curl); }
};
struct SlistDeleter {
  void operator()(curl_slist* list) const { curl_slist_free_all(list); }
};
using CurlHandle = std::unique_ptr<CURL, CurlDeleter>;
using CurlHeaders = std::unique_ptr<curl_slist, SlistDeleter>;

void GlobalInitOnce() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_NOTHING); });
}

size_t AppendBody(char* data, size_t size, size_t count, void* user) {
  static_cast<std::string*>(user)->append(data, size * count);
  return size * count;
}

std::string Trim(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) {
    text.remove_prefix(1);
  }
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) {
    text.remove_suffix(1);
  }
  return std::string(text);
}

size_t CollectHeader(char* data, size_t size, size_t count, void* user) {
  std::string_view line(data, size * count);
  auto* headers = static_cast<std::map<std::string, std::string>*>(user);
  if (line.rfind("HTTP/", 0) == 0) {
    headers->clear();  // a new response (after 100 Continue): keep only the final headers
  } else if (size_t colon = line.find(':'); colon != std::string_view::npos) {
    (*headers)[AsciiLower(Trim(line.substr(0, colon)))] = Trim(line.substr(colon + 1));
  }
  return size * count;
}

size_t ReadFromFd(char* buffer, size_t size, size_t count, void* user) {
  int fd = *static_cast<int*>(user);
  ssize_t n;
  do {
    n = ::read(fd, buffer, size * count);
  } while (n < 0 && errno == EINTR);
  return n < 0 ? CURL_READFUNC_ABORT : static_cast<size_t>(n);
}

}  // namespace

Result<std::string> DockerSocketPath(const char* docker_host) {
  if (docker_host == nullptr || *docker_host == '\0') return std::string(kDefaultDockerSocket);
  std::string_view value(docker_host);
  constexpr std::string_view kScheme = "unix://";
  if (value.rfind(kScheme, 0) != 0 || value.size() == kScheme.size() ||
      value[kScheme.size()] != '/') {
    return Fail(ErrorCode::kInvalidArgument,
                "DOCKER_HOST={} is not supported: only a local unix socket (unix:///path) is",
                value);
  }
  return std::string(value.substr(kScheme.size()));
}

std::string UrlEncode(std::string_view text) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : text) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return out;
}

std::string HttpResponse::Header(std::string_view name) const {
  auto it = headers.find(AsciiLower(name));
  return it == headers.end() ? std::string() : it->second;
}

UnixSocketHttp::UnixSocketHttp(std::string socket_path) : socket_path_(std::move(socket_path)) {}

Result<HttpResponse> UnixSocketHttp::Send(const HttpRequest& request) const {
  GlobalInitOnce();  // at the first request, not here: libcurl is loaded only when it is used
  CurlHandle curl(curl_easy_init());
  if (!curl) {
    std::string why = LibcurlLoadError();
    return Fail(ErrorCode::kSandboxUnavailable, "curl_easy_init failed{}{}",
                why.empty() ? "" : ": ", why);
  }
  CURL* h = curl.get();
  HttpResponse response;
  char error_buffer[CURL_ERROR_SIZE] = {};
  std::string url = "http://docker" + request.target;  // the host name is not used on a socket

  CurlHeaders headers;
  auto add_header = [&headers](const std::string& line) {
    headers.reset(curl_slist_append(headers.release(), line.c_str()));
  };
  add_header("Expect:");  // no 100-continue round trip before bodies

  Fd upload;
  curl_easy_setopt(h, CURLOPT_UNIX_SOCKET_PATH, socket_path_.c_str());
  curl_easy_setopt(h, CURLOPT_URL, url.c_str());
  curl_easy_setopt(h, CURLOPT_ERRORBUFFER, error_buffer);
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, static_cast<long>(request.timeout.count()));
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, 10'000L);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, AppendBody);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &response.body);
  curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, CollectHeader);
  curl_easy_setopt(h, CURLOPT_HEADERDATA, &response.headers);
  int upload_fd = -1;
  if (!request.upload_file.empty()) {
    upload.Reset(::open(request.upload_file.c_str(), O_RDONLY | O_CLOEXEC));
    if (!upload) return FailSys("open", request.upload_file);
    struct stat st {};
    if (::fstat(upload.get(), &st) != 0) return FailSys("fstat", request.upload_file);
    upload_fd = upload.get();
    curl_easy_setopt(h, CURLOPT_POST, 1L);
    curl_easy_setopt(h, CURLOPT_READFUNCTION, ReadFromFd);
    curl_easy_setopt(h, CURLOPT_READDATA, &upload_fd);
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(st.st_size));
    add_header("Content-Type: " + request.content_type);
  } else if (!request.body.empty()) {
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, request.body.data());
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(request.body.size()));
    add_header("Content-Type: " + request.content_type);
  } else if (request.method == "POST") {
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, "");
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(0));
  }
  if (request.method == "HEAD") {
    curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
  } else if (request.method != "GET" && request.method != "POST") {
    curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, request.method.c_str());
  }
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers.get());

  CURLcode code = curl_easy_perform(h);
  if (code != CURLE_OK) {
    return Fail(ErrorCode::kSandboxUnavailable, "{} {} on unix socket {}: {}", request.method,
                request.target, socket_path_,
                error_buffer[0] != '\0' ? error_buffer : curl_easy_strerror(code));
  }
  curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &response.status);
  return response;
}

}  // namespace sandbox::docker
