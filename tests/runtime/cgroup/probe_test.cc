// Host probes for real: the user namespace probe passes here and reports the failing step where
// user namespaces are denied (a nested limit of 0, or a seccomp filter); the seccomp probe.
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <string>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "runtime/probe/host_probe.h"
#include "tests/runtime/cgroup/cgroup_test_util.h"
#include "tests/support/test_support.h"

namespace sandbox::probe_test {
namespace {

std::string Describe(const probe::UsernsProbe& probe) {
  return fmt::format("ok={} step='{}' errno={} detail='{}' why='{}'", probe.ok, probe.failed_step,
                     probe.sys_errno, probe.detail, probe.explanation);
}

TEST_CASE("userns probe passes on this host", "[probe]") {
  auto probe = probe::ProbeUserNamespaces();
  INFO(Describe(probe));
  CHECK(probe.ok);
  CHECK(probe.failed_step.empty());
  bool has_max = false;
  for (const auto& [name, value] : probe.sysctls) has_max |= name == "user.max_user_namespaces";
  CHECK(has_max);
}

TEST_CASE("userns probe passes unprivileged too", "[probe]") {
  auto outcome = testing::RunInChild([](int out) {
    if (::geteuid() == 0 && !testing::DropTo(65534)) return 90;
    // Changing credentials made us non-dumpable, which makes /proc/self/uid_map root's; an
    // unprivileged server started by execve() is dumpable, as this restores.
    if (::prctl(PR_SET_DUMPABLE, 1, 0, 0, 0) != 0) return 91;
    auto probe = probe::ProbeUserNamespaces();
    testing::WriteString(out, Describe(probe));
    return probe.ok ? 0 : 1;
  });
  INFO(outcome.output);
  CHECK(outcome.code == 0);
}

TEST_CASE("userns probe names the failing step when namespaces are used up", "[probe]") {
  auto outcome = testing::RunInChild([](int out) {
    // user.max_user_namespaces is per user namespace: set it to 0 inside a namespace of our
    // own, so only our descendants are refused (the host is untouched).
    if (::unshare(CLONE_NEWUSER) != 0) return 91;
    int fd = ::open("/proc/sys/user/max_user_namespaces", O_WRONLY | O_CLOEXEC);
    if (fd < 0 || ::write(fd, "0", 1) != 1) return 92;
    ::close(fd);
    auto probe = probe::ProbeUserNamespaces();
    testing::WriteString(out, Describe(probe));
    return probe.ok ? 1 : 0;
  });
  INFO(outcome.output);
  REQUIRE(outcome.code == 0);
  CHECK(outcome.output.find("step='unshare(CLONE_NEWUSER)'") != std::string::npos);
  CHECK(outcome.output.find(fmt::format("errno={}", ENOSPC)) != std::string::npos);
  CHECK(outcome.output.find("max_user_namespaces=0") != std::string::npos);
}

TEST_CASE("userns probe names the failing step under a seccomp filter denying unshare", "[probe]") {
  auto outcome = testing::RunInChild([](int out) {
    // What a container's default seccomp profile does to unshare: EPERM.
    struct sock_filter filter[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_unshare, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog program = {static_cast<unsigned short>(sizeof filter / sizeof filter[0]),
                                 filter};
    if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return 91;
    if (::syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &program) != 0) return 92;
    auto probe = probe::ProbeUserNamespaces();
    testing::WriteString(out, Describe(probe));
    auto seccomp = probe::ProbeSeccomp();
    testing::WriteString(out,
                         fmt::format("\nseccomp mode_now={} ok={}", seccomp.mode_now, seccomp.ok));
    return probe.ok ? 1 : 0;
  });
  INFO(outcome.output);
  REQUIRE(outcome.code == 0);
  CHECK(outcome.output.find("step='unshare(CLONE_NEWUSER)'") != std::string::npos);
  CHECK(outcome.output.find(fmt::format("errno={}", EPERM)) != std::string::npos);
  CHECK(outcome.output.find("seccomp") != std::string::npos);
  // Filters stack: the probe child still installs its own, and we see we run under one.
  CHECK(outcome.output.find("seccomp mode_now=2 ok=true") != std::string::npos);
}

TEST_CASE("seccomp probe installs and checks a filter", "[probe]") {
  auto probe = probe::ProbeSeccomp();
  INFO(probe.detail);
  CHECK(probe.ok);
  CHECK(probe.failed_step.empty());
}

TEST_CASE("Docker probe against a real daemon", "[probe][docker]") {
  auto probe = probe::ProbeDocker();
  if (!probe.reachable) {
    testing::SkipTest("no Docker daemon answers (tools/lib/dockerd.sh start): " + probe.detail);
  }
  INFO(probe.detail);
  CHECK_FALSE(probe.api_version.empty());
  // Debian 12's docker.io 20.10 speaks API 1.41, the minimum the Docker backend needs.
  CHECK(probe.api_ok);
}

TEST_CASE("host report: backend and limits", "[probe]") {
  testing::ScopedEnv cgroups("SANDBOX_CGROUP", "none");  // no cgroup side effects here
  auto report = probe::ProbeHost(Limits{}, "auto", "");
  INFO(report.backend.reason);
  CHECK(report.backend.backend == "namespace");  // userns and seccomp work on this host
  CHECK(report.cgroup_mode == "none");
  CHECK(report.limits.cgroup_mode == "none");
  CHECK_FALSE(report.limits.limits.empty());
  CHECK_FALSE(report.kernel.empty());
}

}  // namespace
}  // namespace sandbox::probe_test
