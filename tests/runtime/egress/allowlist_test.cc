#include "runtime/egress/allowlist.h"

#include <catch2/catch.hpp>

#include "runtime/egress/ip_address.h"

namespace sandbox::egress::allowlist_test {
namespace {

IpAddress Ip(const char* text) { return *ParseIpLiteral(text); }

TEST_CASE("allowlist: names, wildcards, ports and the pypi shorthand", "[unit]") {
  auto list = Allowlist::Parse(" pypi , *.githubusercontent.com, example.org:8443,Mirror.Lan. ");
  REQUIRE(list);
  CHECK(list->Entries() == std::vector<std::string>{"pypi.org", "files.pythonhosted.org",
                                                    "*.githubusercontent.com", "example.org:8443",
                                                    "mirror.lan"});
  CHECK(list->AllowsName("pypi.org", 443));
  CHECK(list->AllowsName("pypi.org", 80));
  CHECK_FALSE(list->AllowsName("pypi.org", 22));
  CHECK(list->AllowsName("files.pythonhosted.org", 443));
  CHECK_FALSE(list->AllowsName("evil-pypi.org", 443));
  CHECK_FALSE(list->AllowsName("pypi.org.evil.com", 443));
  // *.suffix: subdomains only, never the apex, never a look-alike.
  CHECK(list->AllowsName("raw.githubusercontent.com", 443));
  CHECK(list->AllowsName("a.b.githubusercontent.com", 443));
  CHECK_FALSE(list->AllowsName("githubusercontent.com", 443));
  CHECK_FALSE(list->AllowsName("evilgithubusercontent.com", 443));
  // A port replaces the default 80 and 443.
  CHECK(list->AllowsName("example.org", 8443));
  CHECK_FALSE(list->AllowsName("example.org", 443));
  CHECK(list->AllowsName("mirror.lan", 80));
  // Names never allow addresses.
  CHECK_FALSE(list->AllowsAddress(Ip("127.0.0.1"), 443));
}

TEST_CASE("allowlist: IP addresses and CIDR ranges", "[unit]") {
  auto list = Allowlist::Parse("10.1.2.0/24,127.0.0.1:3141,[fd00::]/8,[::1]:8080,192.168.1.5");
  REQUIRE(list);
  CHECK(list->Entries() == std::vector<std::string>{"10.1.2.0/24", "127.0.0.1:3141", "[fd00::]/8",
                                                    "[::1]:8080", "192.168.1.5"});
  CHECK(list->AllowsAddress(Ip("10.1.2.200"), 1));
  CHECK_FALSE(list->AllowsAddress(Ip("10.1.3.1"), 443));
  CHECK(list->AllowsAddress(Ip("127.0.0.1"), 3141));
  CHECK_FALSE(list->AllowsAddress(Ip("127.0.0.1"), 3142));
  CHECK(list->AllowsAddress(Ip("fdab::1"), 443));
  CHECK(list->AllowsAddress(Ip("::1"), 8080));
  CHECK_FALSE(list->AllowsAddress(Ip("::1"), 80));
  CHECK(list->AllowsAddress(Ip("192.168.1.5"), 22));
  // An IPv4-mapped IPv6 address is its IPv4 address.
  CHECK(list->AllowsAddress(Ip("::ffff:10.1.2.3"), 80));
  CHECK(Allowlist::Parse("fd00::/8")->AllowsAddress(Ip("fd12::5"), 80));
}

TEST_CASE("allowlist: bad entries are refused with the entry named", "[unit]") {
  for (const char* bad : {"pypi.org:0", "pypi.org:70000", "pypi.org:x", "*", "*.com", "a.*.com",
                          "10.1.2.3/16", "10.0.0.0/33", "[::1]/129", "10.0.0.0/8:80", "bad host",
                          "under/slash", "999.1.1.1", "-x.com:", "a..b"}) {
    INFO(bad);
    auto list = Allowlist::Parse(bad);
    REQUIRE_FALSE(list);
    CHECK(list.error().code == ErrorCode::kInvalidArgument);
    CHECK(list.error().message.find("egress allowlist entry") != std::string::npos);
  }
  CHECK(Allowlist::Parse("")->empty());
  CHECK(Allowlist::Parse(" , ")->empty());
}

TEST_CASE("ip: every spelling the resolver takes is an address, not a name", "[unit]") {
  for (const char* loopback : {"127.0.0.1", "127.1", "0x7f000001", "2130706433", "0177.0.0.1",
                               "0x7f.0.0.1", "[::ffff:127.0.0.1]", "::ffff:7f00:1"}) {
    INFO(loopback);
    auto address = ParseIpLiteral(loopback);
    REQUIRE(address);
    CHECK(address->ToString() == "127.0.0.1");
    CHECK(SpecialPurpose(*address) == "loopback");
  }
  CHECK(ParseIpLiteral("[::1]")->v6);
  CHECK_FALSE(ParseIpLiteral("pypi.org"));
  CHECK_FALSE(ParseIpLiteral("127.0.0.1.nip.io"));
  CHECK_FALSE(ParseIpLiteral("fe80::1%eth0"));
  CHECK_FALSE(ParseIpLiteral("[1.2.3.4]"));
}

TEST_CASE("ip: special-purpose ranges are named, public addresses are not", "[unit]") {
  CHECK(SpecialPurpose(Ip("10.0.0.1")) == "private");
  CHECK(SpecialPurpose(Ip("172.31.255.255")) == "private");
  CHECK(SpecialPurpose(Ip("192.168.0.1")) == "private");
  CHECK(SpecialPurpose(Ip("169.254.169.254")).starts_with("link-local"));
  CHECK(!SpecialPurpose(Ip("100.100.100.200")).empty());  // Alibaba's metadata
  CHECK(SpecialPurpose(Ip("0.0.0.0")).starts_with("unspecified"));
  CHECK(SpecialPurpose(Ip("224.0.0.1")) == "multicast");
  CHECK(!SpecialPurpose(Ip("255.255.255.255")).empty());
  CHECK(SpecialPurpose(Ip("::")) == "unspecified");
  CHECK(SpecialPurpose(Ip("::1")) == "loopback");
  CHECK(SpecialPurpose(Ip("fe80::1")) == "link-local");
  CHECK(!SpecialPurpose(Ip("fd00:ec2::254")).empty());  // AWS's IPv6 metadata
  CHECK(SpecialPurpose(Ip("ff02::1")) == "multicast");
  CHECK(!SpecialPurpose(Ip("64:ff9b::7f00:1")).empty());
  CHECK(!SpecialPurpose(Ip("2002:7f00:1::")).empty());
  CHECK(SpecialPurpose(Ip("151.101.0.223")).empty());
  CHECK(SpecialPurpose(Ip("172.32.0.1")).empty());
  CHECK(SpecialPurpose(Ip("2a04:4e42::223")).empty());
}

TEST_CASE("names: normalized, and refused when not DNS names", "[unit]") {
  CHECK(NormalizeHostName("PyPI.org.") == "pypi.org");
  CHECK_FALSE(NormalizeHostName(""));
  CHECK_FALSE(NormalizeHostName("a..b"));
  CHECK_FALSE(NormalizeHostName("a b"));
  CHECK_FALSE(NormalizeHostName(std::string_view("a\0b", 3)));
  CHECK_FALSE(NormalizeHostName("x%00.com"));
  CHECK_FALSE(NormalizeHostName(std::string(64, 'a') + ".com"));
}

}  // namespace
}  // namespace sandbox::egress::allowlist_test
