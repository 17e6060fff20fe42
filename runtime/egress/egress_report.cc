#include "runtime/egress/egress_report.h"

#include <fmt/format.h>

#include "runtime/base/units.h"

namespace sandbox::egress {
namespace {

std::string JoinEntries(const std::vector<std::string>& entries) {
  std::string joined;
  for (const std::string& entry : entries) joined += (joined.empty() ? "" : ", ") + entry;
  return joined;
}

}  // namespace

EgressInfo DescribePolicy(const EgressConfig& policy) {
  EgressInfo info;
  info.max_bytes = policy.limits.max_bytes;
  if (!policy.enabled()) return info;
  info.enabled = true;
  info.allow = policy.allow.Entries();
  info.index_url = policy.index_url;
  return info;
}

nlohmann::json EgressJson(const EgressInfo& info, bool with_usage) {
  nlohmann::json json = {{"enabled", info.enabled}};
  if (!info.enabled) return json;
  json["allow"] = info.allow;
  json["index_url"] = info.index_url;
  json["max_bytes"] = info.max_bytes;
  if (with_usage) {
    json["bytes"] = info.usage.bytes;
    json["connections"] = info.usage.connections;
    json["refused"] = info.usage.refused;
    json["open"] = info.usage.open;
    json["byte_limit_reached"] = info.usage.byte_limit_reached;
  }
  return json;
}

std::string EgressLine(const EgressInfo& info, bool with_usage) {
  if (!info.enabled) return "none (no network)";
  std::string line = fmt::format("{} (index {})", JoinEntries(info.allow),
                                 info.index_url.empty() ? "pip's default" : info.index_url);
  if (with_usage) {
    line += fmt::format("; {} of {} carried, {} connection(s), {} refused{}",
                        FormatBytes(info.usage.bytes), FormatBytes(info.max_bytes),
                        info.usage.connections, info.usage.refused,
                        info.usage.byte_limit_reached ? " (byte limit reached)" : "");
  }
  return line;
}

std::string EgressSentence(const EgressConfig& policy) {
  if (!policy.enabled()) return "There is no network access.";
  return "Network: only HTTP(S) through the proxy already set in HTTP_PROXY/HTTPS_PROXY, to " +
         JoinEntries(policy.allow.Entries()) +
         " (names without a port: 80 and 443); anything else is refused with 403, there is no "
         "DNS inside, and a session created with egress=false has no network.";
}

}  // namespace sandbox::egress
