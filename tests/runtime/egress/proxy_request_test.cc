#include "runtime/egress/proxy_request.h"

#include <catch2/catch.hpp>

namespace sandbox::egress::proxy_request_test {
namespace {

std::optional<ProxyRequest> Parse(std::string_view head, int* status = nullptr,
                                  std::string* why = nullptr) {
  int s = 0;
  std::string w;
  auto request = ParseProxyRequest(head, status ? status : &s, why ? why : &w);
  return request;
}

TEST_CASE("proxy request: CONNECT names a host and port", "[unit]") {
  auto request = Parse("CONNECT pypi.org:443 HTTP/1.1\r\nHost: pypi.org:443\r\n\r\n");
  REQUIRE(request);
  CHECK(request->tunnel);
  CHECK(request->host == "pypi.org");
  CHECK(request->port == 443);
  auto v6 = Parse("CONNECT [::1]:8443 HTTP/1.1\r\n\r\n");
  REQUIRE(v6);
  CHECK(v6->host == "::1");
  CHECK(v6->port == 8443);
  CHECK_FALSE(Parse("CONNECT pypi.org HTTP/1.1\r\n\r\n"));
  CHECK_FALSE(Parse("CONNECT pypi.org:0 HTTP/1.1\r\n\r\n"));
  CHECK_FALSE(Parse("CONNECT pypi.org:99999 HTTP/1.1\r\n\r\n"));
  CHECK_FALSE(Parse("CONNECT :443 HTTP/1.1\r\n\r\n"));
}

TEST_CASE("proxy request: an absolute URI becomes origin form with Connection: close", "[unit]") {
  auto request = Parse(
      "GET http://Index.Local:8080/simple/pkg/?q=1#frag HTTP/1.1\r\nHost: index.local:8080\r\n"
      "Proxy-Connection: keep-alive\r\nProxy-Authorization: Basic eA==\r\n"
      "Connection: keep-alive\r\nAccept: */*\r\n\r\n");
  REQUIRE(request);
  CHECK_FALSE(request->tunnel);
  CHECK(request->host == "Index.Local");
  CHECK(request->port == 8080);
  CHECK(request->upstream_head ==
        "GET /simple/pkg/?q=1 HTTP/1.1\r\nHost: index.local:8080\r\nAccept: */*\r\n"
        "Connection: close\r\n\r\n");
  auto bare = Parse("GET http://example.com HTTP/1.0\n\n");
  REQUIRE(bare);
  CHECK(bare->port == 80);
  CHECK(bare->upstream_head == "GET / HTTP/1.0\r\nHost: example.com\r\nConnection: close\r\n\r\n");
}

TEST_CASE("proxy request: what a proxy does not serve", "[unit]") {
  int status = 0;
  std::string why;
  CHECK_FALSE(Parse("GET / HTTP/1.1\r\nHost: x\r\n\r\n", &status, &why));
  CHECK(status == 400);
  CHECK_FALSE(Parse("GET https://x/ HTTP/1.1\r\n\r\n", &status, &why));
  CHECK(why.find("CONNECT") != std::string::npos);
  CHECK_FALSE(Parse("GET http://u:p@x/ HTTP/1.1\r\n\r\n"));
  CHECK_FALSE(Parse("GET http://x/ HTTP/2\r\n\r\n", &status, &why));
  CHECK(status == 505);
  CHECK_FALSE(Parse("get http://x/ HTTP/1.1\r\n\r\n"));
  CHECK_FALSE(Parse("GET http://x/ HTTP/1.1\r\n folded\r\n\r\n"));
  CHECK_FALSE(Parse("GET  http://x/ HTTP/1.1\r\n\r\n"));
  CHECK_FALSE(Parse(""));
}

TEST_CASE("proxy request: the end of the head", "[unit]") {
  CHECK(FindHeadEnd("CONNECT a:1 HTTP/1.1\r\n\r\nrest") == 24);
  CHECK(FindHeadEnd("GET http://a/ HTTP/1.0\n\n") == 24);
  CHECK_FALSE(FindHeadEnd("CONNECT a:1 HTTP/1.1\r\nHost: a\r\n"));
}

}  // namespace
}  // namespace sandbox::egress::proxy_request_test
