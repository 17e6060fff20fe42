// What one run used, as the session manager measures it around the run (call_usage.h): checked
// against known work on both backends. The memory peak is the call's own where the kernel resets
// it (cgroup v1, cgroup v2 on Linux >= 6.12), else the session's, and the result says which.
#include <cmath>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "tests/runtime/behaviour/behaviour_fixture.h"

namespace usage_test {

namespace {

constexpr uint64_t kMiB = 1 << 20;

BEHAVIOUR_TEST("a run reports its own CPU seconds and memory peak", "") {
  fixture.GvisorDiffers(
      "the cgroup also holds the Sentry and the Gofer: the memory peak includes them, and the CPU "
      "time under ptrace is not the guest's alone");
  std::string session = fixture.NewSession();
  // 200 MiB, every page touched (a bytearray's pages are only charged once written).
  auto big = fixture.Python(session,
                            "b = bytearray(200 << 20)\n"
                            "for i in range(0, len(b), 4096):\n"
                            "    b[i] = 1\n"
                            "del b\n");
  REQUIRE(big.exit_code == 0);
  if (big.memory_peak_scope.empty()) {
    WARN("no memory figures for runs here (no cgroup in sight): the peak goes unchecked");
  } else {
    CHECK(big.memory_peak_bytes >= 200 * kMiB);
    auto small = fixture.Python(session, "print('small')");
    REQUIRE(small.exit_code == 0);
    if (small.memory_peak_scope == "call") {
      // Reset when it started: the worker's own size, not the 200 MiB before it.
      CHECK(small.memory_peak_bytes < 150 * kMiB);
      CHECK(small.memory_peak_bytes > 0);
      // The session's own peak survives the per-call reset.
      auto info = fixture.manager().Get(session);
      REQUIRE(info);
      CHECK(info->usage.memory_peak_bytes >= 200 * kMiB);
    } else {
      CHECK(small.memory_peak_scope == "session");
      CHECK(small.memory_peak_bytes >= 200 * kMiB);
    }
  }
  // Two seconds of the worker's own CPU time, however busy the host is.
  auto busy = fixture.Python(session,
                             "import time\n"
                             "start = time.process_time()\n"
                             "while time.process_time() - start < 2:\n"
                             "    pass\n");
  REQUIRE(busy.exit_code == 0);
  CHECK(busy.cpu_seconds >= 1.9);
  CHECK(busy.cpu_seconds < 3.5);
  CHECK(busy.duration_s >= 1.9);
  auto idle = fixture.Python(session, "import time\ntime.sleep(0.5)");
  CHECK(idle.cpu_seconds < 0.4);
}

// The CPU counters count whole nanoseconds or coarser; a run's figure is their difference and
// says as much (not 0.00021489800000000503, the binary noise of subtracting two doubles).
BEHAVIOUR_TEST("a run's CPU seconds are whole nanoseconds", "") {
  std::string session = fixture.NewSession();
  for (int i = 0; i < 5; ++i) {
    auto run = fixture.Python(session, "print(sum(range(100000)))");
    REQUIRE(run.exit_code == 0);
    INFO(fmt::format("cpu_seconds {:.20g}", run.cpu_seconds));
    CHECK(run.cpu_seconds == std::round(run.cpu_seconds * 1e9) / 1e9);
  }
}

}  // namespace

}  // namespace usage_test
