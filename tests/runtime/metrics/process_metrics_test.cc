#include "runtime/metrics/process_metrics.h"

#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <catch2/catch.hpp>

namespace sandbox::metrics::process_metrics_test {
namespace {

TEST_CASE("proc stat is parsed after the last parenthesis of the name [unit]", "[unit]") {
  // proc(5) fields: utime 14 = 250 ticks, stime 15 = 50, starttime 22 = 1000, vsize 23,
  // rss 24 = 300 pages. The command name holds spaces and a ')'.
  std::string stat =
      "4242 (odd ) name) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 3 0 1000 "
      "123456789 300 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n";
  ProcessFigures figures = ParseProcStat(stat, 100, 4096, 1700000000);
  REQUIRE(figures.cpu_seconds);
  CHECK(*figures.cpu_seconds == Approx(3.0));
  REQUIRE(figures.resident_bytes);
  CHECK(*figures.resident_bytes == 300 * 4096);
  REQUIRE(figures.virtual_bytes);
  CHECK(*figures.virtual_bytes == 123456789);
  REQUIRE(figures.start_time_seconds);
  CHECK(*figures.start_time_seconds == Approx(1700000010));

  CHECK_FALSE(ParseProcStat("garbage", 100, 4096, 0).cpu_seconds);
  CHECK_FALSE(ParseProcStat("1 (x) S 1", 100, 4096, 0).resident_bytes);
}

TEST_CASE("this process's figures are plausible and follow its descriptors [unit]", "[unit]") {
  ProcessFigures before = ReadProcessFigures();
  REQUIRE(before.cpu_seconds);
  REQUIRE(before.resident_bytes);
  CHECK(*before.resident_bytes > 1 << 20);
  REQUIRE(before.start_time_seconds);
  CHECK(*before.start_time_seconds <= static_cast<double>(::time(nullptr)) + 1);
  CHECK(*before.start_time_seconds > static_cast<double>(::time(nullptr)) - 3600 * 24 * 365);
  REQUIRE(before.open_fds);
  REQUIRE(before.max_fds);
  int fds[3];
  for (int& fd : fds) fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  ProcessFigures after = ReadProcessFigures();
  for (int fd : fds) ::close(fd);
  CHECK(*after.open_fds == *before.open_fds + 3);

  auto families = ProcessFamilies(after);
  REQUIRE(families.size() == 6);
  CHECK(families[0].name == "process_cpu_seconds_total");
  CHECK(families[0].type == MetricType::kCounter);
}

}  // namespace
}  // namespace sandbox::metrics::process_metrics_test
