// The CPU priority of a session started cold while its zygote imports (issue #28): what a burst
// of new sessions pays per call depends on it.
#include "runtime/session/cold_preload_priority.h"

#include <vector>

#include <catch2/catch.hpp>

namespace sandbox::cold_preload_priority_test {
namespace {

// Records every priority write, as the cgroup would receive it.
struct Writes {
  std::vector<CpuPriority> seen;
  ColdPreloadPriority::Setter Setter() {
    return [this](CpuPriority priority) -> Status {
      seen.push_back(priority);
      return {};
    };
  }
};

constexpr CpuPriority kBg = CpuPriority::kBackground;
constexpr CpuPriority kNormal = CpuPriority::kNormal;

TEST_CASE("cold preload priority: no write for calls before the zygote is due", "[unit]") {
  Writes writes;
  ColdPreloadPriority priority("sess_a", writes.Setter());
  for (int i = 0; i < 20; ++i) {
    priority.CallBegins();
    priority.CallEnds(/*preload_pending=*/true);
  }
  CHECK(writes.seen.empty());
  CHECK_FALSE(priority.lowered());
}

TEST_CASE("cold preload priority: background from the due moment, raised for each own call",
          "[unit]") {
  Writes writes;
  ColdPreloadPriority priority("sess_a", writes.Setter());
  priority.ZygoteDue();
  CHECK(writes.seen == std::vector<CpuPriority>{kBg});
  CHECK(priority.lowered());
  priority.CallBegins();
  CHECK_FALSE(priority.lowered());
  priority.CallEnds(true);
  CHECK(writes.seen == std::vector<CpuPriority>{kBg, kNormal, kBg});
  // The preload is in place after this call: normal for good, nothing more written.
  priority.CallBegins();
  priority.CallEnds(false);
  CHECK(priority.done());
  CHECK_FALSE(priority.lowered());
  priority.CallBegins();
  priority.CallEnds(true);
  priority.ZygoteDue();
  CHECK(writes.seen == std::vector<CpuPriority>{kBg, kNormal, kBg, kNormal});
}

TEST_CASE("cold preload priority: due during an own call, lowered when the call ends", "[unit]") {
  Writes writes;
  ColdPreloadPriority priority("sess_a", writes.Setter());
  priority.CallBegins();
  priority.ZygoteDue();  // the call runs at normal priority to its end
  CHECK(writes.seen.empty());
  priority.CallEnds(true);
  CHECK(writes.seen == std::vector<CpuPriority>{kBg});
  CHECK(priority.lowered());
}

TEST_CASE("cold preload priority: a failed lower is not taken for done", "[unit]") {
  int attempts = 0;
  ColdPreloadPriority priority("sess_a", [&](CpuPriority) -> Status {
    ++attempts;
    return Fail(ErrorCode::kInternal, "cpu.shares: no such file");
  });
  priority.ZygoteDue();
  CHECK_FALSE(priority.lowered());
  priority.CallBegins();  // nothing to raise
  priority.CallEnds(true);
  CHECK(attempts == 2);  // tried again after the call
}

}  // namespace
}  // namespace sandbox::cold_preload_priority_test
