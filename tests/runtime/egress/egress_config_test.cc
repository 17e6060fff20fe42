#include "runtime/egress/egress_config.h"

#include <catch2/catch.hpp>

namespace sandbox::egress::egress_config_test {
namespace {

TEST_CASE("egress config: the index host is allowed implicitly, only when egress is on", "[unit]") {
  EgressConfig off;
  off.index_url = "https://mirror.example/simple";
  REQUIRE(ApplyIndexUrl(off));
  CHECK_FALSE(off.enabled());  // an index alone does not open the network

  EgressConfig mirror;
  mirror.allow = *Allowlist::Parse("*.githubusercontent.com");
  mirror.index_url = "http://devpi.lan:3141/root/pypi/+simple/";
  REQUIRE(ApplyIndexUrl(mirror));
  CHECK(mirror.allow.AllowsName("devpi.lan", 3141));
  CHECK_FALSE(mirror.allow.AllowsName("devpi.lan", 443));

  EgressConfig literal;
  literal.allow = *Allowlist::Parse("pypi");
  literal.index_url = "http://127.0.0.1:8080/simple";
  REQUIRE(ApplyIndexUrl(literal));
  CHECK(literal.allow.AllowsAddress(*ParseIpLiteral("127.0.0.1"), 8080));
  CHECK_FALSE(literal.allow.AllowsAddress(*ParseIpLiteral("127.0.0.1"), 8081));

  EgressConfig pypi;
  pypi.allow = *Allowlist::Parse("pypi");
  REQUIRE(ApplyIndexUrl(pypi));
  CHECK(pypi.index_url == "https://pypi.org/simple");
}

TEST_CASE("egress config: index URLs that are not http(s)://host are refused", "[unit]") {
  for (const char* bad : {"ftp://x/simple", "https:///simple", "http://x:0/", "http://x:99999/",
                          "https://x/simple'; rm -rf /", "http://[::1/simple"}) {
    INFO(bad);
    EgressConfig config;
    config.allow = *Allowlist::Parse("pypi");
    config.index_url = bad;
    CHECK_FALSE(ApplyIndexUrl(config));
  }
  auto host = HostOfUrl("https://user:pw@[fd00::1]:8443/simple");
  REQUIRE(host);
  CHECK(host->host == "fd00::1");
  CHECK(host->port == 8443);
}

}  // namespace
}  // namespace sandbox::egress::egress_config_test
