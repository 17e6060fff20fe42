#include "runtime/egress/ip_address.h"

#include <arpa/inet.h>

#include <cstring>
#include <vector>

#include <fmt/format.h>

namespace sandbox::egress {

IpAddress IpAddress::FromV4(uint32_t host_order) {
  IpAddress address;
  address.bytes[0] = static_cast<uint8_t>(host_order >> 24);
  address.bytes[1] = static_cast<uint8_t>(host_order >> 16);
  address.bytes[2] = static_cast<uint8_t>(host_order >> 8);
  address.bytes[3] = static_cast<uint8_t>(host_order);
  return address;
}

namespace {

IpAddress FromV6Bytes(const uint8_t* raw) {
  static constexpr uint8_t kMappedPrefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  IpAddress address;
  if (std::memcmp(raw, kMappedPrefix, sizeof kMappedPrefix) == 0) {
    std::memcpy(address.bytes.data(), raw + 12, 4);
    return address;
  }
  address.v6 = true;
  std::memcpy(address.bytes.data(), raw, 16);
  return address;
}

}  // namespace

std::optional<IpAddress> IpAddress::FromSockaddr(const struct sockaddr* address) {
  if (address->sa_family == AF_INET) {
    const auto* in4 = reinterpret_cast<const struct sockaddr_in*>(address);
    return FromV4(ntohl(in4->sin_addr.s_addr));
  }
  if (address->sa_family == AF_INET6) {
    const auto* in6 = reinterpret_cast<const struct sockaddr_in6*>(address);
    return FromV6Bytes(in6->sin6_addr.s6_addr);
  }
  return std::nullopt;
}

std::string IpAddress::ToString() const {
  char text[INET6_ADDRSTRLEN] = {};
  ::inet_ntop(v6 ? AF_INET6 : AF_INET, bytes.data(), text, sizeof text);
  return text;
}

std::optional<IpAddress> ParseIpLiteral(std::string_view host) {
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
    if (host.find(':') == std::string_view::npos) return std::nullopt;  // "[1.2.3.4]"
  }
  if (host.empty() || host.size() > 64 || host.find('\0') != std::string_view::npos) {
    return std::nullopt;
  }
  std::string text(host);
  if (text.find(':') != std::string::npos) {
    uint8_t raw[16];
    if (::inet_pton(AF_INET6, text.c_str(), raw) != 1) return std::nullopt;
    return FromV6Bytes(raw);
  }
  // inet_aton, not inet_pton: it is what getaddrinfo falls back to, so what it accepts is an
  // address to the resolver whatever it looks like ("127.1", "0x7f.1", "017700000001").
  struct in_addr v4;
  if (::inet_aton(text.c_str(), &v4) == 0) return std::nullopt;
  return IpAddress::FromV4(ntohl(v4.s_addr));
}

bool IpRange::Contains(const IpAddress& address) const {
  if (address.v6 != base.v6) return false;
  int full = prefix_bits / 8;
  if (std::memcmp(address.bytes.data(), base.bytes.data(), static_cast<size_t>(full)) != 0) {
    return false;
  }
  int rest = prefix_bits % 8;
  if (rest == 0) return true;
  auto mask = static_cast<uint8_t>(0xff << (8 - rest));
  return (address.bytes[static_cast<size_t>(full)] & mask) ==
         (base.bytes[static_cast<size_t>(full)] & mask);
}

std::string IpRange::ToString() const {
  if (prefix_bits == base.bits()) return base.v6 ? "[" + base.ToString() + "]" : base.ToString();
  return base.v6 ? fmt::format("[{}]/{}", base.ToString(), prefix_bits)
                 : fmt::format("{}/{}", base.ToString(), prefix_bits);
}

std::optional<IpRange> ParseIpRange(std::string_view text, std::string* why) {
  std::string_view address_text = text;
  std::optional<int> prefix;
  if (size_t slash = text.rfind('/'); slash != std::string_view::npos) {
    address_text = text.substr(0, slash);
    std::string_view digits = text.substr(slash + 1);
    if (digits.empty() || digits.size() > 3) {
      *why = fmt::format("'{}': the prefix length is not a number", text);
      return std::nullopt;
    }
    int bits = 0;
    for (char c : digits) {
      if (c < '0' || c > '9') {
        *why = fmt::format("'{}': the prefix length is not a number", text);
        return std::nullopt;
      }
      bits = bits * 10 + (c - '0');
    }
    prefix = bits;
  }
  // Only the dotted-quad and IPv6 forms in an allowlist: an operator's "10.1" is a typo, not
  // a wish for 10.0.0.1.
  std::string plain(address_text);
  if (plain.size() >= 2 && plain.front() == '[' && plain.back() == ']') {
    plain = plain.substr(1, plain.size() - 2);
  }
  uint8_t raw[16];
  IpAddress base;
  if (::inet_pton(AF_INET, plain.c_str(), raw) == 1) {
    base = IpAddress::FromV4(static_cast<uint32_t>(raw[0]) << 24 |
                             static_cast<uint32_t>(raw[1]) << 16 |
                             static_cast<uint32_t>(raw[2]) << 8 | raw[3]);
  } else if (::inet_pton(AF_INET6, plain.c_str(), raw) == 1) {
    base = FromV6Bytes(raw);
  } else {
    *why = fmt::format("'{}' is not an IP address or CIDR range", text);
    return std::nullopt;
  }
  IpRange range{base, prefix.value_or(base.bits())};
  if (range.prefix_bits < 0 || range.prefix_bits > base.bits()) {
    *why = fmt::format("'{}': the prefix length is more than {}", text, base.bits());
    return std::nullopt;
  }
  IpRange masked = range;
  for (int bit = range.prefix_bits; bit < base.bits(); ++bit) {
    masked.base.bytes[static_cast<size_t>(bit / 8)] &= static_cast<uint8_t>(~(0x80 >> (bit % 8)));
  }
  if (masked.base != range.base) {
    *why = fmt::format("'{}' has host bits set (did you mean {}?)", text, masked.ToString());
    return std::nullopt;
  }
  return range;
}

namespace {

struct SpecialRange {
  IpRange range;
  std::string_view what;
};

const std::vector<SpecialRange>& SpecialRanges() {
  static const std::vector<SpecialRange> ranges = [] {
    std::vector<SpecialRange> list;
    auto add = [&list](std::string_view cidr, std::string_view what) {
      std::string why;
      list.push_back({*ParseIpRange(cidr, &why), what});
    };
    // IPv4: RFC 6890 and the IANA IPv4 special-purpose registry.
    add("0.0.0.0/8", "unspecified (this network)");
    add("10.0.0.0/8", "private");
    add("100.64.0.0/10", "shared (carrier-grade NAT; some clouds' metadata)");
    add("127.0.0.0/8", "loopback");
    add("169.254.0.0/16", "link-local (cloud metadata)");
    add("172.16.0.0/12", "private");
    add("192.0.0.0/24", "IETF protocol assignments");
    add("192.0.2.0/24", "documentation");
    add("192.88.99.0/24", "6to4 relay");
    add("192.168.0.0/16", "private");
    add("198.18.0.0/15", "benchmarking");
    add("198.51.100.0/24", "documentation");
    add("203.0.113.0/24", "documentation");
    add("224.0.0.0/4", "multicast");
    add("240.0.0.0/4", "reserved (and broadcast)");
    // IPv6: the IANA IPv6 special-purpose registry. Ranges that embed an IPv4 address
    // (NAT64, 6to4, Teredo, IPv4-compatible) are refused whole: they could reach a private one.
    add("::/128", "unspecified");
    add("::1/128", "loopback");
    add("::/96", "IPv4-compatible (deprecated)");
    add("64:ff9b::/96", "NAT64 (embeds an IPv4 address)");
    add("64:ff9b:1::/48", "local NAT64");
    add("100::/64", "discard-only");
    add("2001::/23", "IETF protocol assignments (Teredo, …)");
    add("2001:db8::/32", "documentation");
    add("2002::/16", "6to4 (embeds an IPv4 address)");
    add("fc00::/7", "unique local (private; cloud metadata)");
    add("fe80::/10", "link-local");
    add("fec0::/10", "site-local (deprecated)");
    add("ff00::/8", "multicast");
    return list;
  }();
  return ranges;
}

}  // namespace

std::string_view SpecialPurpose(const IpAddress& address) {
  for (const SpecialRange& special : SpecialRanges()) {
    if (special.range.Contains(address)) return special.what;
  }
  return {};
}

}  // namespace sandbox::egress
