// What a deployment's HTTP options mean once the port is bound, without a socket: who may
// call (the admission policy a configuration yields, judged by HttpAdmission as the transport
// judges it) and the resource identifier tokens must name.
#include "mcp/http_options.h"

#include <algorithm>

#include <catch2/catch.hpp>

namespace http_options_test {

using namespace sandbox::mcp;

namespace {

bool Contains(const std::vector<std::string>& list, const std::string& value) {
  return std::find(list.begin(), list.end(), value) != list.end();
}

// A POST /mcp as a browser on `origin` (none: "") would send it to `host`.
HttpRequestHead PostFrom(std::string host, std::string origin = "") {
  HttpRequestHead head;
  head.method = "POST";
  head.target = "/mcp";
  head.fields = {{"Host", std::move(host)},
                 {"Accept", "application/json, text/event-stream"},
                 {"Content-Type", "application/json"}};
  if (!origin.empty()) head.fields.push_back({"Origin", std::move(origin)});
  head.content_length = 2;
  return head;
}

bool Admitted(const HttpOptions& options, int port, const HttpRequestHead& head) {
  return HttpAdmission(AdmissionPolicyFor(options, port)).Judge(head).admit;
}

}  // namespace

TEST_CASE("http options: by default only the loopback names on the bound port may call", "[unit]") {
  HttpOptions options;  // 127.0.0.1, no origins configured
  options.auth_tokens = {"secret"};
  options.max_body_bytes = 1234;
  HttpAdmissionPolicy policy = AdmissionPolicyFor(options, 41000);
  CHECK(policy.origins == std::vector<std::string>{"http://localhost:41000",
                                                   "http://127.0.0.1:41000", "http://[::1]:41000"});
  CHECK_FALSE(policy.any_host);
  CHECK(Contains(policy.hosts, "127.0.0.1"));
  CHECK(policy.auth_tokens == std::vector<std::string>{"secret"});
  CHECK(policy.max_body_bytes == 1234);
  CHECK(policy.resource_server == nullptr);  // made by the caller: it fetches keys

  HttpOptions open = options;
  open.auth_tokens.clear();
  CHECK(Admitted(open, 41000, PostFrom("127.0.0.1:41000", "http://localhost:41000")));
  CHECK_FALSE(Admitted(open, 41000, PostFrom("rebound.example.com:41000")));
  // Another port's page is another origin.
  CHECK_FALSE(Admitted(open, 41000, PostFrom("127.0.0.1:41000", "http://localhost:3000")));
}

TEST_CASE("http options: a wildcard address cannot check Host unless origins are named", "[unit]") {
  for (const char* wildcard : {"0.0.0.0", "::", "[::]", ""}) {
    CAPTURE(wildcard);
    CHECK(IsWildcardAddress(wildcard));
    HttpOptions options;
    options.host = wildcard;
    HttpAdmissionPolicy policy = AdmissionPolicyFor(options, 8080);
    CHECK(policy.any_host);
    CHECK(policy.hosts.empty());  // no bound name to add
    CHECK(Admitted(options, 8080, PostFrom("10.1.2.3:8080")));
  }
  CHECK_FALSE(IsWildcardAddress("127.0.0.1"));

  HttpOptions named;
  named.host = "0.0.0.0";
  named.allowed_origins = {"https://App.Example.com:8443"};
  HttpAdmissionPolicy policy = AdmissionPolicyFor(named, 8080);
  CHECK_FALSE(policy.any_host);
  CHECK(policy.origins == std::vector<std::string>{"https://app.example.com:8443"});
  CHECK(policy.hosts == std::vector<std::string>{"app.example.com"});
  CHECK(Admitted(named, 8080, PostFrom("app.example.com:8443", "https://app.example.com:8443")));
  CHECK_FALSE(Admitted(named, 8080, PostFrom("10.1.2.3:8080")));
}

TEST_CASE("http options: '*' admits any origin and host, the public URL's host is allowed",
          "[unit]") {
  HttpOptions any;
  any.allowed_origins = {"*"};
  HttpAdmissionPolicy star = AdmissionPolicyFor(any, 8080);
  CHECK(star.any_host);
  CHECK(star.origins == std::vector<std::string>{"*"});
  CHECK(Admitted(any, 8080, PostFrom("anything.example:1", "https://elsewhere.example")));

  HttpOptions proxied;
  proxied.public_url = "https://mcp.example.com/team-a";
  HttpAdmissionPolicy policy = AdmissionPolicyFor(proxied, 8080);
  CHECK(Contains(policy.hosts, "mcp.example.com"));
  CHECK(Admitted(proxied, 8080, PostFrom("mcp.example.com")));
}

TEST_CASE("http options: an IPv6 bound host is allowed in brackets", "[unit]") {
  HttpOptions options;
  options.host = "fd00::1";
  HttpAdmissionPolicy policy = AdmissionPolicyFor(options, 8080);
  CHECK(Contains(policy.hosts, "[fd00::1]"));
  CHECK(Admitted(options, 8080, PostFrom("[fd00::1]:8080")));
  CHECK(ListeningAuthority("fd00::1", 8080) == "[fd00::1]:8080");
  CHECK(ListeningAuthority("127.0.0.1", 8080) == "127.0.0.1:8080");
}

TEST_CASE("http options: the default resource id is the public URL's, else the bound one",
          "[unit]") {
  HttpOptions options;
  CHECK(DefaultResourceId(options, 9000) == "http://127.0.0.1:9000/mcp");
  options.host = "0.0.0.0";
  CHECK(DefaultResourceId(options, 9000) == "http://127.0.0.1:9000/mcp");
  options.host = "mcp.internal";
  CHECK(DefaultResourceId(options, 9000) == "http://mcp.internal:9000/mcp");
  options.public_url = "https://mcp.example.com/team-a";
  CHECK(DefaultResourceId(options, 9000) == "https://mcp.example.com/team-a/mcp");
}

}  // namespace http_options_test
