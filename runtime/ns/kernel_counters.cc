#include "runtime/ns/kernel_counters.h"

#include <sys/resource.h>

#include <algorithm>
#include <charconv>

#include <fmt/format.h>

#include "runtime/base/files.h"
#include "runtime/base/units.h"

namespace sandbox::ns {

namespace {

uint64_t ReadCounter(const char* name) {
  auto text = ReadFile(std::string("/proc/sys/user/") + name);
  if (!text) return 0;
  uint64_t value = 0;
  std::from_chars(text->data(), text->data() + text->size(), value);
  return value;
}

uint64_t SoftRlimit(int resource) {
  struct rlimit limit = {};
  if (::getrlimit(static_cast<__rlimit_resource>(resource), &limit) != 0) return 0;
  return limit.rlim_cur == RLIM_INFINITY ? UINT64_MAX : limit.rlim_cur;
}

uint64_t Share(uint64_t host, int max_sessions, uint64_t floor) {
  if (host == 0) return 0;  // no such counter here
  uint64_t share = host / 2 / static_cast<uint64_t>(std::max(max_sessions, 1));
  return std::min(host, std::max(share, floor));
}

}  // namespace

KernelCounters HostPerUserBudget() {
  KernelCounters host;
  host.inotify_instances = ReadCounter("max_inotify_instances");
  host.inotify_watches = ReadCounter("max_inotify_watches");
  host.fanotify_groups = ReadCounter("max_fanotify_groups");
  host.fanotify_marks = ReadCounter("max_fanotify_marks");
  host.sigpending = SoftRlimit(RLIMIT_SIGPENDING);
  host.msgqueue_bytes = SoftRlimit(RLIMIT_MSGQUEUE);
  return host;
}

KernelCounters SandboxCaps(const KernelCounters& host, bool own_host_uid, int max_sessions) {
  if (own_host_uid) return host;
  KernelCounters caps;
  caps.inotify_instances = Share(host.inotify_instances, max_sessions, kMinSandboxInotifyInstances);
  caps.inotify_watches = Share(host.inotify_watches, max_sessions, kMinSandboxInotifyWatches);
  caps.fanotify_groups = Share(host.fanotify_groups, max_sessions, kMinSandboxFanotifyGroups);
  caps.fanotify_marks = Share(host.fanotify_marks, max_sessions, kMinSandboxFanotifyMarks);
  caps.sigpending = Share(host.sigpending, max_sessions, kMinSandboxSigpending);
  caps.msgqueue_bytes = Share(host.msgqueue_bytes, max_sessions, kMinSandboxMsgqueueBytes);
  return caps;
}

std::vector<UserSysctl> SandboxSysctls(const KernelCounters& caps) {
  std::vector<UserSysctl> out;
  auto add = [&out](const char* name, uint64_t value) {
    // The sysctls are ints; a host value above INT_MAX means "unlimited" there.
    if (value == 0) return;
    value = std::min<uint64_t>(value, 0x7fffffff);
    out.push_back({std::string("proc/sys/user/") + name, std::to_string(value)});
  };
  add("max_inotify_instances", caps.inotify_instances);
  add("max_inotify_watches", caps.inotify_watches);
  add("max_fanotify_groups", caps.fanotify_groups);
  add("max_fanotify_marks", caps.fanotify_marks);
  out.push_back({"proc/sys/user/max_user_namespaces", "0"});
  return out;
}

std::vector<RlimitSetting> SandboxCounterRlimits(const KernelCounters& caps) {
  std::vector<RlimitSetting> out;
  auto add = [&out](int resource, uint64_t value) {
    rlim_t limit = value == UINT64_MAX ? RLIM_INFINITY : static_cast<rlim_t>(value);
    out.push_back({resource, limit, limit});
  };
  add(RLIMIT_SIGPENDING, caps.sigpending);
  add(RLIMIT_MSGQUEUE, caps.msgqueue_bytes);
  return out;
}

void DescribeCaps(const KernelCounters& caps, bool own_host_uid, EnforcedLimits& out) {
  const std::string note =
      own_host_uid ? "charged to the session's own host uid (its user namespace's owner)"
                   : "charged to the server's user: each session gets half the per-user budget "
                     "divided by SANDBOX_MAX_SESSIONS (with a floor)";
  auto add = [&](const char* name, LimitMechanism mechanism, std::string value,
                 const std::string& how) {
    out.limits.push_back({name, mechanism, std::move(value), how + "; " + note});
  };
  if (caps.inotify_instances != 0) {
    add("inotify_instances", LimitMechanism::kUserNamespace, std::to_string(caps.inotify_instances),
        "user.max_inotify_instances");
  }
  if (caps.inotify_watches != 0) {
    add("inotify_watches", LimitMechanism::kUserNamespace, std::to_string(caps.inotify_watches),
        "user.max_inotify_watches");
  }
  add("signals_pending", LimitMechanism::kRlimit, std::to_string(caps.sigpending),
      "RLIMIT_SIGPENDING");
  add("mqueue", LimitMechanism::kRlimit, FormatBytes(caps.msgqueue_bytes), "RLIMIT_MSGQUEUE");
}

}  // namespace sandbox::ns
