// The HTTP admission rules from a request head alone (no socket): what is refused before any
// body is read, with which status, and what an admitted request carries.
#include "mcp/http_admission.h"

#include <catch2/catch.hpp>

#include "mcp/tool_result.h"

namespace http_admission_test {

using namespace sandbox::mcp;

namespace {

HttpAdmission Policy(std::string token = "") {
  HttpAdmissionPolicy policy;
  if (!token.empty()) policy.auth_tokens = {std::move(token)};
  policy.origins = {"http://127.0.0.1:8080", "http://localhost:8080"};
  policy.max_body_bytes = 1000;
  return HttpAdmission(policy);
}

HttpRequestHead Post(std::vector<HttpField> extra = {}) {
  HttpRequestHead head;
  head.method = "POST";
  head.target = "/mcp";
  head.fields = {{"Host", "127.0.0.1:8080"},
                 {"Accept", "application/json, text/event-stream"},
                 {"Content-Type", "application/json"}};
  for (auto& field : extra) head.fields.push_back(field);
  head.content_length = 10;
  return head;
}

}  // namespace

TEST_CASE("http admission: an ordinary POST /mcp is admitted on the mcp route", "[unit]") {
  auto verdict = Policy().Judge(Post());
  CHECK(verdict.admit);
  CHECK(verdict.route == HttpRoute::kMcp);
  CHECK(verdict.response.headers.empty());
}

TEST_CASE("http admission: Host and Origin from elsewhere are 403", "[unit]") {
  auto head = Post();
  head.fields[0].value = "evil.example.com";
  auto host = Policy().Judge(head);
  CHECK_FALSE(host.admit);
  CHECK(host.response.status == 403);
  auto origin = Policy().Judge(Post({{"Origin", "http://evil.example.com"}}));
  CHECK(origin.response.status == 403);
  auto own = Policy().Judge(Post({{"origin", "http://localhost:8080"}}));
  CHECK(own.admit);
  REQUIRE_FALSE(own.response.headers.empty());
  CHECK(own.response.headers[0].name == "Access-Control-Allow-Origin");
  CHECK(own.response.headers[0].value == "http://localhost:8080");
}

TEST_CASE("http admission: the token is judged before the body, OPTIONS needs none", "[unit]") {
  auto missing = Policy("tok").Judge(Post());
  CHECK(missing.response.status == 401);
  bool challenge = false;
  for (auto& f : missing.response.headers) challenge |= f.name == "WWW-Authenticate";
  CHECK(challenge);
  // A huge declared body does not get past a missing token as 413 either: 401 first.
  auto huge = Post();
  huge.content_length = 1ull << 40;
  CHECK(Policy("tok").Judge(huge).response.status == 401);
  CHECK(Policy("tok").Judge(Post({{"Authorization", "Bearer nope"}})).response.status == 401);
  CHECK(Policy("tok").Judge(Post({{"authorization", "bearer tok"}})).admit);
  // Several tokens (rotation): each admits, nothing else does.
  HttpAdmissionPolicy rotating;
  rotating.auth_tokens = {"new-token", "old-token"};
  rotating.origins = {"http://127.0.0.1:8080"};
  HttpAdmission two(rotating);
  CHECK(two.Judge(Post({{"Authorization", "Bearer new-token"}})).admit);
  CHECK(two.Judge(Post({{"Authorization", "Bearer old-token"}})).admit);
  CHECK(two.Judge(Post({{"Authorization", "Bearer new-tokenold-token"}})).response.status == 401);
  CHECK(two.Judge(Post({{"Authorization", "Bearer "}})).response.status == 401);
  HttpRequestHead options;
  options.method = "OPTIONS";
  options.target = "/mcp";
  CHECK(Policy("tok").Judge(options).admit);
}

TEST_CASE("http admission: Accept 406, Content-Type 415, declared length 413", "[unit]") {
  auto head = Post();
  head.fields[1].value = "application/json";
  CHECK(Policy().Judge(head).response.status == 406);
  head = Post();
  head.fields[2].value = "text/plain";
  CHECK(Policy().Judge(head).response.status == 415);
  head = Post();
  head.content_length = 1001;
  CHECK(Policy().Judge(head).response.status == 413);
  head.content_length = 1000;
  CHECK(Policy().Judge(head).admit);
  HttpRequestHead get;
  get.method = "GET";
  get.target = "/healthz";
  get.content_length = 1u << 20;  // nothing to upload to a GET
  CHECK(Policy().Judge(get).response.status == 413);
}

TEST_CASE("http admission: routes and methods", "[unit]") {
  HttpRequestHead head;
  head.method = "GET";
  head.target = "/nowhere";
  CHECK(Policy().Judge(head).response.status == 404);
  head.target = "/healthz";
  CHECK(Policy().Judge(head).route == HttpRoute::kHealth);
  // Readiness, for a proxy's health check: no token needed (it tells counts only).
  head.target = "/readyz";
  CHECK(Policy("tok").Judge(head).route == HttpRoute::kReady);
  CHECK(Policy("tok").Judge(head).admit);
  head.method = "POST";
  CHECK(Policy().Judge(head).response.status == 405);
  head.method = "GET";
  head.target = "/files/s/a.png?token=x";
  CHECK(Policy().Judge(head).route == HttpRoute::kFile);
  head.method = "POST";
  CHECK(Policy().Judge(head).response.status == 405);
  head.target = "/mcp";
  head.method = "PUT";
  CHECK(Policy().Judge(head).response.status == 405);
}

TEST_CASE("http admission: decoding helpers", "[unit]") {
  CHECK(PercentDecode("out%20dir/a%2e%2E") == "out dir/a..");
  CHECK_FALSE(PercentDecode("bad%2"));
  CHECK_FALSE(PercentDecode("bad%zz"));
  CHECK(QueryParam("a=1&token=ab%2Bc", "token") == "ab+c");
  CHECK(QueryParam("a=1", "token").empty());
}

TEST_CASE("http admission: named tokens give the subject, OAuth adds the metadata route",
          "[unit]") {
  HttpAdmissionPolicy policy;
  policy.origins = {"http://127.0.0.1:8080"};
  policy.resource_server =
      auth::MakeResourceServer({"secret-a", "secret-b", "legacy"}, {"alice", "bob"}, {}, "");
  HttpAdmission named(policy);
  auto alice = named.Judge(Post({{"Authorization", "Bearer secret-a"}}));
  CHECK(alice.admit);
  CHECK(alice.subject == "token:alice");
  CHECK(named.Judge(Post({{"Authorization", "Bearer secret-b"}})).subject == "token:bob");
  auto legacy = named.Judge(Post({{"Authorization", "Bearer legacy"}}));
  CHECK(legacy.admit);
  CHECK(legacy.subject.empty());
  // Without OAuth the metadata path is not served.
  HttpRequestHead prm;
  prm.method = "GET";
  prm.target = "/.well-known/oauth-protected-resource/mcp";
  prm.fields = {{"Host", "127.0.0.1:8080"}};
  CHECK(named.Judge(prm).route == HttpRoute::kNone);

  // With an issuer (never reached here: no token below needs its keys).
  policy.resource_server = std::make_shared<auth::ResourceServer>(
      auth::ResourceServerPolicy{.static_tokens = {{"alice", "secret-a"}},
                                 .issuer = "http://127.0.0.1:1",
                                 .resource = "http://127.0.0.1:8080/mcp",
                                 .scopes = {"sandbox"},
                                 .skew = std::chrono::seconds(60),
                                 .max_token_bytes = 8u << 10,
                                 .quota_claim = ""},
      nullptr);
  HttpAdmission oauth(policy);
  auto metadata = oauth.Judge(prm);
  CHECK(metadata.admit);
  CHECK(metadata.route == HttpRoute::kResourceMetadata);
  auto anonymous = oauth.Judge(Post());
  CHECK_FALSE(anonymous.admit);
  CHECK(anonymous.response.status == 401);
  bool challenged = false;
  for (const auto& field : anonymous.response.headers) {
    challenged = challenged || (field.name == "WWW-Authenticate" &&
                                field.value ==
                                    "Bearer resource_metadata=\"http://127.0.0.1:8080/.well-known/"
                                    "oauth-protected-resource/mcp\"");
  }
  CHECK(challenged);
  CHECK(oauth.Judge(Post({{"Authorization", "Bearer secret-a"}})).subject == "token:alice");
}

}  // namespace http_admission_test
