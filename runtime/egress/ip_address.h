// IpAddress: an IPv4 or IPv6 address as the egress proxy judges it, the CIDR ranges of the
// allowlist, and the special-purpose ranges (loopback, private, link-local, metadata, …) no
// sandbox may reach unless an operator names them. Pure data, no I/O.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace sandbox::egress {

struct IpAddress {
  bool v6 = false;
  std::array<uint8_t, 16> bytes{};  // v4: the first 4 bytes

  // An IPv4-mapped IPv6 address (::ffff:a.b.c.d) becomes the IPv4 address it carries, so
  // ranges and judgments see one form.
  static IpAddress FromV4(uint32_t host_order);
  static std::optional<IpAddress> FromSockaddr(const struct sockaddr* address);
  int bits() const { return v6 ? 128 : 32; }
  std::string ToString() const;
  bool operator==(const IpAddress&) const = default;
};

// The address a host string spells, or nullopt when it is a name. Accepts every form the
// C library would take as an address (inet_aton's "127.1", "0x7f000001", "2130706433",
// octal parts) so none of them slips through as a "name", plus IPv6 with or without
// brackets. Scope ids ("fe80::1%eth0") are refused as names with a '%'.
std::optional<IpAddress> ParseIpLiteral(std::string_view host);

struct IpRange {
  IpAddress base;  // masked to prefix_bits
  int prefix_bits = 0;
  bool Contains(const IpAddress& address) const;
  std::string ToString() const;
};

// "10.1.2.0/24", "[fd00::]/8", "fd00::/8", or an address alone (a /32 or /128). A base with
// bits set below the prefix is refused (a typo such as 10.1.2.3/16 would grant more than meant).
std::optional<IpRange> ParseIpRange(std::string_view text, std::string* why);

// Why `address` is not a public unicast address ("loopback", "private", "link-local (cloud
// metadata)", …), or "" when it is one. IANA's special-purpose registries, both families.
std::string_view SpecialPurpose(const IpAddress& address);

}  // namespace sandbox::egress
