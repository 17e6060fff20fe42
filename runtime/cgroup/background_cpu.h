// How a sandbox waits at background CPU priority (CpuPriority::kBackground) so that the call it
// is raised for runs at once (issue #38).
//
// A lowered weight (cpu.weight 1, cpu.shares 2) yields well on every kernel, but on CFS (Linux
// before 6.6) it leaves a debt: each tick the group runs at weight 1 advances its virtual runtime
// a hundred times faster, and reweight_entity() keeps that lead when the weight is raised again,
// so the raised group is not picked until every busy group has caught up. Measured in Debian
// 12's 6.1 (run-in-vm, two spinners on one CPU, docs/benchmarks.md): after a raise the group
// waited 0.3 s, 0.4 s, and in 5 of 8 runs not once in 0.6 s. cpu.idle and SCHED_IDLE are
// weights too (3), with the same debt; SCHED_IDLE per thread does not even yield to other
// groups, since a group's weight does not depend on its tasks'. EEVDF (6.6+) scales the lag
// with the weight, so a raise takes effect at once there.
//
// So on CFS a background group keeps its normal weight and gets a bandwidth cap instead: a
// tenth of a CPU (cpu.max / cpu.cfs_quota_us). A capped group accrues no debt (it runs at its
// own weight while it runs), and a raise restores the session's quota, which also unthrottles
// it at once. The price: on CFS background work (a pool refill, a cold session's preload) runs
// at a tenth of a CPU even on an idle host.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace sandbox::cgroup {

enum class BackgroundCpu {
  kWeight,        // EEVDF: cpu.weight 1 (v2), cpu.shares 2 (v1); raised by writing 100 / 1024
  kBandwidthCap,  // CFS: normal weight, quota capped to kBackgroundCpuShare; raised by restoring it
};

// The share of one CPU a background group may use under kBandwidthCap.
inline constexpr double kBackgroundCpuShare = 0.1;

// Pure: kWeight from Linux 6.6 on (EEVDF), kBandwidthCap before, and for a release it cannot read.
BackgroundCpu BackgroundCpuFor(std::string_view kernel_release);
// This host's, from uname(2), read once.
BackgroundCpu HostBackgroundCpu();
const char* BackgroundCpuName(BackgroundCpu mechanism);

// The quota (microseconds per `period_micros`) of a background group whose normal quota is
// `quota_micros` (negative: none): the smaller of it and kBackgroundCpuShare of a CPU.
long BackgroundQuotaMicros(long quota_micros, long period_micros);
// cgroup v2's cpu.max text ("max 100000", "100000 100000") capped the same way; nullopt when it
// is not cpu.max text.
std::optional<std::string> BackgroundCpuMax(std::string_view cpu_max);

}  // namespace sandbox::cgroup
