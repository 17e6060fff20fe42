#include "runtime/limits_json.h"

namespace sandbox {

nlohmann::json EnforcedLimitsJson(const EnforcedLimits& enforced) {
  nlohmann::json limits = nlohmann::json::array();
  for (const auto& limit : enforced.limits) {
    limits.push_back({{"name", limit.name},
                      {"mechanism", LimitMechanismName(limit.mechanism)},
                      {"value", limit.value},
                      {"note", limit.note}});
  }
  return {{"cgroup_mode", enforced.cgroup_mode},
          {"reason", enforced.reason},
          {"limits", std::move(limits)}};
}

}  // namespace sandbox
