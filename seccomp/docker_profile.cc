#include "seccomp/docker_profile.h"

#include <map>
#include <optional>
#include <set>

#include "seccomp/policy.h"

namespace sandbox::seccomp {
namespace {

constexpr uint64_t kLow32 = 0xffffffffULL;

// The 32-bit value a conditional refusal tests (one Int32Eq-style condition), with its index.
std::optional<std::pair<unsigned, uint32_t>> Int32Tested(const SyscallRule& rule) {
  if (rule.args.size() != 1) return std::nullopt;
  const ArgCondition& arg = rule.args.front();
  if (arg.op != Cmp::kMaskedEq || arg.value != kLow32 || arg.value_two > kLow32) {
    return std::nullopt;
  }
  return std::pair{arg.index, static_cast<uint32_t>(arg.value_two)};
}

// Prefix blocks "(arg & mask) == value" over the low 32 bits that together hold every value
// except those in `excluded`: at each bit, the half without an excluded value is one block, the
// other half is split further. At most 32 blocks per excluded value.
void ComplementBlocks(uint32_t prefix, int fixed_bits, const std::vector<uint32_t>& excluded,
                      std::vector<std::pair<uint64_t, uint64_t>>& blocks) {
  if (excluded.empty()) {
    const uint64_t mask = fixed_bits == 0 ? 0 : (kLow32 << (32 - fixed_bits)) & kLow32;
    blocks.emplace_back(mask, prefix);
    return;
  }
  if (fixed_bits == 32) return;  // the excluded value itself
  const uint32_t bit = uint32_t{1} << (31 - fixed_bits);
  for (uint32_t half : {uint32_t{0}, bit}) {
    std::vector<uint32_t> inside;
    for (uint32_t value : excluded) {
      if ((value & bit) == half) inside.push_back(value);
    }
    ComplementBlocks(prefix | half, fixed_bits + 1, inside, blocks);
  }
}

nlohmann::json Entry(const std::vector<std::string>& names, Action action, int errno_value,
                     const std::vector<ArgCondition>& args, const std::string& why) {
  nlohmann::json entry = {{"names", names}, {"action", ActionName(action)}};
  if (action == Action::kErrno) entry["errnoRet"] = errno_value;
  if (!args.empty()) {
    nlohmann::json json_args = nlohmann::json::array();
    for (const ArgCondition& arg : args) {
      json_args.push_back({{"index", arg.index},
                           {"value", arg.value},
                           {"valueTwo", arg.value_two},
                           {"op", CmpName(arg.op)}});
    }
    entry["args"] = std::move(json_args);
  }
  if (!why.empty()) entry["comment"] = why;
  return entry;
}

}  // namespace

nlohmann::json DockerProfile(const PolicySpec& spec) {
  // Names whose unconditional allow has conditional refusals next to it (ioctl), with the
  // values those refuse: libseccomp lets the unconditional rule win (see the header).
  std::map<std::string, std::set<uint32_t>> refused_values;
  std::map<std::string, unsigned> refused_index;
  std::set<std::string> allowed;
  for (const SyscallRule& rule : spec.rules) {
    if (rule.action == Action::kAllow && rule.args.empty()) {
      allowed.insert(rule.names.begin(), rule.names.end());
    }
  }
  for (const SyscallRule& rule : spec.rules) {
    if (rule.action != Action::kErrno || rule.args.empty()) continue;
    auto tested = Int32Tested(rule);
    for (const std::string& name : rule.names) {
      if (!allowed.contains(name) || !tested) continue;
      auto [it, inserted] = refused_index.emplace(name, tested->first);
      if (!inserted && it->second != tested->first) continue;  // kept as written (test fails)
      refused_values[name].insert(tested->second);
    }
  }

  nlohmann::json syscalls = nlohmann::json::array();
  for (const SyscallRule& rule : spec.rules) {
    std::vector<std::string> names;
    for (const std::string& name : rule.names) {
      const bool carved = refused_values.contains(name);
      if (carved && rule.action == Action::kAllow && rule.args.empty()) {
        // The allow, as blocks around the refused values.
        std::vector<std::pair<uint64_t, uint64_t>> blocks;
        const std::set<uint32_t>& refused = refused_values[name];
        ComplementBlocks(0, 0, {refused.begin(), refused.end()}, blocks);
        for (auto [mask, value] : blocks) {
          syscalls.push_back(Entry({name}, Action::kAllow, 0,
                                   {{refused_index[name], Cmp::kMaskedEq, mask, value}},
                                   "every request but the refused ones (their own rules say why)"));
        }
        continue;
      }
      if (carved && rule.action == Action::kErrno && !rule.args.empty() &&
          rule.errno_value == spec.default_errno) {
        continue;  // outside every allow block: the default action refuses it, as the rule says
      }
      names.push_back(name);
    }
    if (names.empty()) continue;
    syscalls.push_back(Entry(names, rule.action, rule.errno_value, rule.args, rule.why));
  }
  return nlohmann::json{{"defaultAction", "SCMP_ACT_ERRNO"},
                        {"defaultErrnoRet", spec.default_errno},
                        {"architectures", nlohmann::json::array({"SCMP_ARCH_X86_64"})},
                        {"syscalls", std::move(syscalls)}};
}

std::string DockerProfileJson() { return DockerProfile(SandboxPolicy()).dump(); }

}  // namespace sandbox::seccomp
