// CgroupManager::Detect(): picks cgroup2, cgroup1 or none (rlimits only), honouring
// SANDBOX_CGROUP=auto|cgroup2|cgroup1|none, and says why.
#include <stdlib.h>
#include <unistd.h>

#include <optional>

#include <fmt/format.h>

#include "runtime/cgroup/cgroup1.h"
#include "runtime/cgroup/cgroup2.h"
#include "runtime/cgroup/cgroup_fs.h"
#include "runtime/cgroup/cgroup_limits.h"
#include "runtime/cgroup/fallback_hint.h"
#include "runtime/cgroup/limits_plan.h"
#include "runtime/cgroup/systemd_scope.h"

namespace sandbox {
namespace {

// Mode "none": nothing to create; rlimits (RlimitsFor) and the pid namespace do the work.
class NoCgroup final : public SandboxCgroup {
 public:
  Status Attach(pid_t) override { return {}; }
  int DirFd() const override { return -1; }
  // Nothing to kill by group: the backend kills the sandbox's pid 1, and the kernel then kills
  // every process of its pid namespace.
  Status KillAll() override { return {}; }
  SandboxUsage Usage() const override { return {}; }
  uint64_t OomKills() const override { return 0; }
  Status Destroy() override { return {}; }
  std::vector<std::string> paths() const override { return {}; }
};

class NoCgroupManager final : public CgroupManager {
 public:
  explicit NoCgroupManager(std::string reason) : reason_(std::move(reason)) {}
  std::string mode() const override { return "none"; }
  std::string reason() const override { return reason_; }
  EnforcedLimits Plan(const Limits& limits) const override {
    cgroup::CgroupCapabilities caps;
    caps.swap_note = cgroup::HostHasSwap()
                         ? "no memory cgroup: swap use is not limited"
                         : "no memory cgroup; this host has no swap, so none can be used";
    EnforcedLimits plan = cgroup::BuildPlan("none", limits, caps);
    plan.reason = reason_;
    return plan;
  }
  Result<std::unique_ptr<SandboxCgroup>> Create(const std::string& session_id,
                                                const Limits&) override {
    SBX_TRY(cgroup::GroupNameFor(session_id));
    return std::unique_ptr<SandboxCgroup>(std::make_unique<NoCgroup>());
  }
  Result<int> SweepOrphans(const KeepGroup&) override { return 0; }
  std::vector<std::string> parent_dirs() const override { return {}; }

 private:
  std::string reason_;
};

struct Detection {
  std::unique_ptr<CgroupManager> manager;
  std::optional<Error> refusal;  // why Open() must fail: a bad or unsatisfiable SANDBOX_CGROUP
};

std::string Join(const std::vector<std::string>& items) {
  std::string text;
  for (const auto& item : items) text += (text.empty() ? "" : ", ") + item;
  return text;
}

Detection DetectWithOverride(const std::string& owner) {
  const char* env = ::getenv("SANDBOX_CGROUP");
  std::string requested = env != nullptr && *env != '\0' ? env : "auto";
  auto none = [](std::string reason, std::optional<Error> refusal = std::nullopt) {
    return Detection{std::make_unique<NoCgroupManager>(std::move(reason)), std::move(refusal)};
  };

  if (requested != "auto" && requested != "cgroup2" && requested != "cgroup1" &&
      requested != "none") {
    std::string why =
        fmt::format("SANDBOX_CGROUP='{}' is not one of auto, cgroup2, cgroup1, none", requested);
    return none(why + "; rlimits only", MakeError(ErrorCode::kInvalidArgument, "{}", why));
  }
  if (requested == "none") return none("SANDBOX_CGROUP=none: rlimits only");
  if (auto name = cgroup::GroupNameFor(owner); !name) {
    std::string why = fmt::format("'{}' cannot name the parent cgroup", owner);
    return none(why, MakeError(ErrorCode::kInvalidArgument, "{}", why));
  }
  std::string forced = requested == "auto" ? "" : fmt::format("SANDBOX_CGROUP={}: ", requested);

  const cgroup::FallbackHost host = cgroup::ProbeFallbackHost();
  std::string v2_why = "not tried (SANDBOX_CGROUP=cgroup1)";
  if (requested != "cgroup1") {
    auto v2 = cgroup::PrepareCgroup2(owner);
    if (!v2 && !host.root && host.cgroup2) {
      // Unprivileged, and our own cgroup is not ours to divide: ask the user's systemd manager
      // for one that is, as rootless podman does.
      std::string first_why = v2.error().message;
      auto scope = cgroup::MoveIntoDelegatedScope(owner);
      if (!scope) {
        v2 = Fail(MakeError(ErrorCode::kSandboxUnavailable, "{}; a delegated scope: {}", first_why,
                            scope.error().message));
      } else {
        v2 = cgroup::PrepareCgroup2(owner).map_error([&](Error e) {
          return std::move(e).Context("in " + *scope + " from the user's systemd manager");
        });
        if (v2) v2->systemd_scope = *scope;
      }
    }
    if (v2) {
      std::string how = "as root";
      if (!v2->systemd_scope.empty()) {
        how = fmt::format("through {}, a scope the user's systemd manager delegated to uid {}",
                          v2->systemd_scope, ::geteuid());
      } else if (v2->delegated) {
        how = "through a subtree delegated to uid " + std::to_string(::geteuid());
      }
      std::string reason = fmt::format("{}cgroup v2 {}: session groups under {} (memory, pids{})",
                                       forced, how, v2->parent, v2->cpu ? ", cpu" : "");
      if (!v2->moved_to.empty()) {
        reason += fmt::format("; the server moved itself to {} (no internal processes rule)",
                              v2->moved_to);
      }
      return {cgroup::MakeCgroup2Manager(std::move(*v2), std::move(reason)), std::nullopt};
    }
    v2_why = v2.error().message;
    if (requested == "cgroup2") {
      std::string why = "SANDBOX_CGROUP=cgroup2 but cgroup v2 is unusable: " + v2_why;
      return none(why + "; rlimits only", MakeError(ErrorCode::kSandboxUnavailable, "{}", why));
    }
  }

  auto v1 = cgroup::PrepareCgroup1(owner);
  if (v1) {
    std::vector<std::string> parents;
    std::vector<std::string> controllers;
    for (const auto& h : v1->hierarchies) {
      parents.push_back(h.parent);
      for (const auto& c : h.controllers) controllers.push_back(c);
    }
    std::string reason =
        fmt::format("{}cgroup v1 as root: session groups under {} ({}); cgroup v2 unusable: {}",
                    forced, Join(parents), Join(controllers), v2_why);
    return {cgroup::MakeCgroup1Manager(std::move(*v1), std::move(reason)), std::nullopt};
  }
  std::string why = fmt::format("cgroup v2: {}; cgroup v1: {}", v2_why, v1.error().message);
  if (requested == "cgroup1") {
    why = "SANDBOX_CGROUP=cgroup1 but cgroup v1 is unusable: " + v1.error().message;
    return none(why + "; rlimits only", MakeError(ErrorCode::kSandboxUnavailable, "{}", why));
  }
  std::string reason = "no usable cgroups, rlimits only (" + why + ")";
  if (std::string hint = cgroup::FallbackHint(host); !hint.empty()) {
    reason += "; " + hint;
  }
  return none(std::move(reason));
}

}  // namespace

std::string CgroupOwnerFor(const std::string& state_dir) {
  std::string dir = state_dir;
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  if (dir.empty() || dir == "/var/lib/mcp-sandbox") return kDefaultCgroupOwner;
  // FNV-1a: stable across builds and runs (std::hash is not promised to be).
  uint64_t hash = 14695981039346656037ull;
  for (unsigned char c : dir) {
    hash ^= c;
    hash *= 1099511628211ull;
  }
  return fmt::format("{}-{:012x}", kDefaultCgroupOwner, hash & 0xffffffffffffull);
}

std::unique_ptr<CgroupManager> CgroupManager::Detect(const std::string& owner) {
  return DetectWithOverride(owner).manager;
}

Result<std::unique_ptr<CgroupManager>> CgroupManager::Open(const std::string& owner) {
  Detection detection = DetectWithOverride(owner);
  if (detection.refusal) return Fail(std::move(*detection.refusal));
  return std::move(detection.manager);
}

}  // namespace sandbox
