// The per-call memory peak window over plain files standing in for a cgroup's (the kernel's
// side, the reset itself, is exercised by the behaviour suite's usage test on real sessions):
// the reset before a run, the reset left until the reply, and the next run's reset skipped when
// the mark has not moved since.
#include "runtime/cgroup/memory_peak.h"

#include <catch2/catch.hpp>

#include "runtime/base/after_reply.h"
#include "runtime/base/files.h"
#include "tests/support/test_support.h"

namespace sandbox::memory_peak_test {
namespace {

TEST_CASE("memory peak: v1 resets max_usage_in_bytes and reads it again [unit]", "[unit]") {
  testing::TempDir group;
  std::string file = group.Join("memory.max_usage_in_bytes");
  REQUIRE(WriteFile(file, "987654321\n"));
  auto peak_file = OpenMemoryPeakFile(group.path(), /*v2=*/false);
  REQUIRE(peak_file);
  auto reader = (*peak_file)->StartWindow();
  REQUIRE(reader);
  CHECK((*peak_file)->peak_before_resets() == 987654321u);  // the session's peak, kept
  CHECK((*peak_file)->resets() == 1u);
  CHECK(ReadFile(file)->front() == '0');  // the reset the kernel takes, written at offset 0
  REQUIRE(WriteFile(file, "4096\n"));     // what the kernel would say after the call
  CHECK((*reader)() == 4096u);
  // No reply to wait for here: the reset for the next call was made at once.
  CHECK((*peak_file)->resets() == 2u);
  CHECK(ReadFile(file)->front() == '0');
  REQUIRE(WriteFile(file, "garbage"));
  auto next = (*peak_file)->StartWindow();  // the mark moved: reset again
  REQUIRE(next);
  CHECK((*peak_file)->resets() == 3u);
  REQUIRE(WriteFile(file, "garbage"));
  CHECK_FALSE((*next)().has_value());
}

TEST_CASE("memory peak: the next reset waits for the reply, skipped if the mark stood [unit]",
          "[unit]") {
  testing::TempDir group;
  std::string file = group.Join("memory.max_usage_in_bytes");
  REQUIRE(WriteFile(file, "7\n"));
  auto peak_file = OpenMemoryPeakFile(group.path(), /*v2=*/false);
  REQUIRE(peak_file);
  MemoryPeakFile& peak = **peak_file;
  auto first = peak.StartWindow();
  REQUIRE(first);
  CHECK(peak.resets() == 1u);
  REQUIRE(WriteFile(file, "300\n"));  // the run's peak
  {
    AfterReply after_reply;
    CHECK((*first)() == 300u);
    CHECK(peak.resets() == 1u);  // not before the reply
    CHECK(ReadFile(file)->front() == '3');
    after_reply.Run();  // the reply is out
    CHECK(peak.resets() == 2u);
    CHECK(peak.peak_before_resets() == 300u);  // the session's peak, kept across the reset
  }
  // The file now says what the reset left ("0"): the next call needs no reset before its run.
  auto second = peak.StartWindow();
  REQUIRE(second);
  CHECK(peak.resets() == 2u);
  // A mark that moved while the session was idle (a background process) is reset before the run.
  {
    AfterReply after_reply;
    CHECK((*second)().has_value());
  }
  CHECK(peak.resets() == 3u);
  REQUIRE(WriteFile(file, "5000\n"));
  auto third = peak.StartWindow();
  REQUIRE(third);
  CHECK(peak.resets() == 4u);
  CHECK(peak.peak_before_resets() == 5000u);
  // A call that starts before the previous one's deferred reset: that reset is dropped (it would
  // cut the running call's window short); the call made its own.
  AfterReply after_reply;
  CHECK((*third)().has_value());
  auto fourth = peak.StartWindow();
  REQUIRE(fourth);
  CHECK(peak.resets() == 5u);
  after_reply.Run();
  CHECK(peak.resets() == 5u);
}

TEST_CASE("memory peak: v2 writes reset through the kept descriptor [unit]", "[unit]") {
  testing::TempDir group;
  std::string file = group.Join("memory.peak");
  REQUIRE(WriteFile(file, "123456789\n"));
  auto peak_file = OpenMemoryPeakFile(group.path(), /*v2=*/true);
  REQUIRE(peak_file);
  auto reader = (*peak_file)->StartWindow();
  REQUIRE(reader);
  CHECK(ReadFile(file)->rfind("reset\n", 0) == 0);
  CHECK((*peak_file)->peak_before_resets() == 0u);  // v2's reset is this descriptor's own
  REQUIRE(WriteFile(file, "8192\n"));
  AfterReply after_reply;
  CHECK((*reader)() == 8192u);
}

TEST_CASE("memory peak: no group, or no peak file, is an error [unit]", "[unit]") {
  CHECK_FALSE(OpenMemoryPeakFile("", false));
  testing::TempDir group;
  CHECK_FALSE(OpenMemoryPeakFile(group.Join("missing"), false));
  CHECK_FALSE(OpenMemoryPeakFile(group.path(), /*v2=*/true));  // no memory.peak
}

}  // namespace
}  // namespace sandbox::memory_peak_test
