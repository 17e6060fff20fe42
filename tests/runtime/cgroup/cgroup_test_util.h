// Helpers for the limits tests: running code in a forked child (to drop privileges, to be the
// process a cgroup limits), unique parent-group names, and environment overrides.
#pragma once

#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <functional>
#include <optional>
#include <string>

#include "runtime/cgroup/cgroup_limits.h"

namespace sandbox::testing {

// A child forked by the test that waits for a go byte, so the parent can put it into a cgroup
// first (as the namespace backend does), then runs `body` and exits with its return value.
class GatedChild {
 public:
  explicit GatedChild(std::function<int()> body);
  ~GatedChild();  // SIGKILLs and reaps the child if still there
  GatedChild(const GatedChild&) = delete;
  GatedChild& operator=(const GatedChild&) = delete;

  pid_t pid() const { return pid_; }
  void Go();
  // Waits for the child; returns the raw wait status.
  int Wait();

 private:
  pid_t pid_ = -1;
  int go_fd_ = -1;
  bool reaped_ = false;
};

// Forks, runs `body` in the child and returns {exit code or 128+signal, what it wrote to the
// given fd}. For checks that must run with other credentials or in another namespace.
struct ChildOutcome {
  int code = -1;
  std::string output;
};
ChildOutcome RunInChild(const std::function<int(int out_fd)>& body);
void WriteString(int fd, const std::string& text);

// Drops to uid/gid `id` (no supplementary groups) in the calling process; false on failure.
bool DropTo(uid_t id);

// The group's CPU quota in microseconds per period: v2 cpu.max, v1 cpu.cfs_quota_us; -1 for
// none ("max"), -2 where neither file is found or cpu.max does not parse.
long QuotaOf(const SandboxCgroup& group);

// A parent-group name no other test (or helper) uses: "mcp-sandbox-test-<pid>-<n>".
std::string UniqueOwner();

// Sets (or unsets, with nullopt) an environment variable for its lifetime.
class ScopedEnv {
 public:
  ScopedEnv(std::string name, std::optional<std::string> value);
  ~ScopedEnv();

 private:
  std::string name_;
  std::optional<std::string> saved_;
};

// Removes the parent groups a manager made (tests use a unique owner, so nothing else is there).
void RemoveParents(const CgroupManager& manager);

// The limits the behaviour tests use: small enough to hit quickly.
Limits SmallLimits();

}  // namespace sandbox::testing
