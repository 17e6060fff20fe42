#include "runtime/egress/allowlist.h"

#include <algorithm>
#include <charconv>

#include <fmt/format.h>

namespace sandbox::egress {
namespace {

std::string_view Trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  return text;
}

std::optional<uint16_t> ParsePort(std::string_view digits) {
  unsigned value = 0;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (ec != std::errc() || end != digits.data() + digits.size() || value == 0 || value > 65535) {
    return std::nullopt;
  }
  return static_cast<uint16_t>(value);
}

std::string PortSuffix(const std::optional<uint16_t>& port) {
  return port ? fmt::format(":{}", *port) : std::string();
}

bool PortMatchesDefault(const std::optional<uint16_t>& rule_port, uint16_t port) {
  return rule_port ? *rule_port == port : (port == 80 || port == 443);
}

}  // namespace

std::optional<std::string> NormalizeHostName(std::string_view host) {
  if (!host.empty() && host.back() == '.') host.remove_suffix(1);
  if (host.empty() || host.size() > 253) return std::nullopt;
  std::string name;
  name.reserve(host.size());
  size_t label = 0;
  for (char c : host) {
    if (c == '.') {
      if (label == 0) return std::nullopt;
      label = 0;
    } else if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_') {
      ++label;
    } else if (c >= 'A' && c <= 'Z') {
      c = static_cast<char>(c - 'A' + 'a');
      ++label;
    } else {
      return std::nullopt;
    }
    if (label > 63) return std::nullopt;
    name.push_back(c);
  }
  if (label == 0) return std::nullopt;
  return name;
}

Result<Allowlist> Allowlist::Parse(std::string_view text) {
  Allowlist list;
  while (!text.empty()) {
    size_t comma = text.find(',');
    std::string_view entry = Trim(text.substr(0, comma));
    text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
    if (entry.empty()) continue;
    auto bad = [&entry](std::string_view why) {
      return Fail(ErrorCode::kInvalidArgument, "egress allowlist entry '{}': {}", entry, why);
    };
    if (entry == "pypi" || entry == "PyPI") {
      list.names_.push_back({"pypi.org", false, std::nullopt});
      list.names_.push_back({"files.pythonhosted.org", false, std::nullopt});
      continue;
    }
    // Split off a port: "[v6]:p", "v4:p", "name:p". A bare IPv6 address has several colons
    // and no port; a CIDR range takes no port.
    std::string_view host = entry;
    std::optional<uint16_t> port;
    size_t colon = entry.rfind(':');
    bool bracketed = !entry.empty() && entry.front() == '[';
    bool one_colon = colon != std::string_view::npos && entry.find(':') == colon;
    if (colon != std::string_view::npos &&
        (one_colon || (bracketed && colon > 0 && entry[colon - 1] == ']'))) {
      port = ParsePort(entry.substr(colon + 1));
      if (!port) return bad("the port is not 1..65535");
      host = entry.substr(0, colon);
    }
    bool looks_numeric = bracketed || host.find(':') != std::string_view::npos ||
                         host.find('/') != std::string_view::npos ||
                         std::all_of(host.begin(), host.end(),
                                     [](char c) { return (c >= '0' && c <= '9') || c == '.'; });
    if (looks_numeric) {
      if (port && host.find('/') != std::string_view::npos) {
        return bad("a CIDR range takes no port");
      }
      std::string why;
      auto range = ParseIpRange(host, &why);
      if (!range) return bad(why);
      list.addresses_.push_back({*range, port});
      continue;
    }
    bool subdomains = host.starts_with("*.");
    if (subdomains) host.remove_prefix(2);
    if (host.find('*') != std::string_view::npos) {
      return bad("'*' may only start an entry, as '*.domain'");
    }
    auto name = NormalizeHostName(host);
    if (!name) return bad("not a host name, IP address or CIDR range");
    if (subdomains && name->find('.') == std::string::npos) {
      return bad("'*.' needs a domain with a dot (a whole top-level domain is too wide)");
    }
    list.names_.push_back({std::move(*name), subdomains, port});
  }
  return list;
}

void Allowlist::AllowName(std::string name, std::optional<uint16_t> port) {
  names_.push_back({std::move(name), false, port});
}

void Allowlist::AllowAddress(const IpAddress& address, uint16_t port) {
  addresses_.push_back({IpRange{address, address.bits()}, port});
}

bool Allowlist::AllowsName(std::string_view host, uint16_t port) const {
  for (const NameRule& rule : names_) {
    if (!PortMatchesDefault(rule.port, port)) continue;
    if (!rule.subdomains) {
      if (host == rule.name) return true;
    } else if (host.size() > rule.name.size() + 1 && host.ends_with(rule.name) &&
               host[host.size() - rule.name.size() - 1] == '.') {
      return true;
    }
  }
  return false;
}

bool Allowlist::AllowsAddress(const IpAddress& address, uint16_t port) const {
  return std::any_of(addresses_.begin(), addresses_.end(), [&](const AddressRule& rule) {
    return (!rule.port || *rule.port == port) && rule.range.Contains(address);
  });
}

std::vector<std::string> Allowlist::Entries() const {
  std::vector<std::string> entries;
  for (const NameRule& rule : names_) {
    entries.push_back((rule.subdomains ? "*." : "") + rule.name + PortSuffix(rule.port));
  }
  for (const AddressRule& rule : addresses_) {
    entries.push_back(rule.range.ToString() + PortSuffix(rule.port));
  }
  return entries;
}

}  // namespace sandbox::egress
