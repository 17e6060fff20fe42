// Allowlist: the hosts a sandbox may reach (SANDBOX_EGRESS_ALLOW), parsed once and judged
// against by the egress proxy. Pure data, no I/O: the proxy resolves names itself and asks
// here about the name first and then about every address it would dial.
//
// Grammar (comma-separated, blanks around entries ignored, case-insensitive):
//   pypi.org                 exact host name, ports 80 and 443
//   *.example.com            any subdomain of example.com (not example.com itself), 80 and 443
//   pypi.org:8443            either of those with one port instead
//   10.1.2.3  10.1.2.3:3141  an IP address (any port, or one): the only way to reach a private,
//   [fd00::1]:3141           loopback or link-local address, or to use an IP literal at all
//   10.1.2.0/24  [fd00::]/8  a CIDR range (any port)
//   pypi                     shorthand for pypi.org,files.pythonhosted.org
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/base/result.h"
#include "runtime/egress/ip_address.h"

namespace sandbox::egress {

struct NameRule {
  std::string name;              // lower case, no trailing dot
  bool subdomains = false;       // "*.name": subdomains only
  std::optional<uint16_t> port;  // none: 80 and 443
};

struct AddressRule {
  IpRange range;
  std::optional<uint16_t> port;  // none: any port
};

class Allowlist {
 public:
  // Fails with kInvalidArgument naming the first bad entry.
  static Result<Allowlist> Parse(std::string_view text);

  bool empty() const { return names_.empty() && addresses_.empty(); }
  // Adds an exact name on one port (the index's host, allowed implicitly).
  void AllowName(std::string name, std::optional<uint16_t> port);
  // Adds one address on one port (the index's, when it is an IP literal).
  void AllowAddress(const IpAddress& address, uint16_t port);

  // Whether the host name (not an IP literal) with `port` matches a name rule.
  bool AllowsName(std::string_view host, uint16_t port) const;
  // Whether an IP/CIDR rule allows `address` on `port`.
  bool AllowsAddress(const IpAddress& address, uint16_t port) const;

  // The entries in canonical form, in order ("pypi.org", "*.example.com:8443", "10.0.0.0/8").
  std::vector<std::string> Entries() const;

 private:
  std::vector<NameRule> names_;
  std::vector<AddressRule> addresses_;
};

// Lower case, one trailing dot dropped; nullopt when `host` is not a DNS name (letters,
// digits, '-', '_' and dots, labels 1..63, total ≤ 253).
std::optional<std::string> NormalizeHostName(std::string_view host);

}  // namespace sandbox::egress
