// EgressLog: a session's connection events are written one by one up to the interval's budget,
// then counted and summarized in one line, so a flood's log stays small whatever the sandbox does.
#include "runtime/egress/egress_log.h"

#include <chrono>
#include <string>

#include <catch2/catch.hpp>

#include "tests/support/log_capture.h"

namespace sandbox::egress::egress_log_test {
namespace {

using namespace std::chrono_literals;

size_t Count(const std::string& text, const std::string& what) {
  size_t count = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) {
    ++count;
  }
  return count;
}

TEST_CASE("egress log: past the budget, events are counted and summarized per interval", "[unit]") {
  testing::LogCapture log(spdlog::level::info);
  const auto t0 = EgressLog::Clock::now();
  {
    EgressLog events("sess_aaaaaaaaaaaa", {3, 10s});
    for (int i = 0; i < 600; ++i) {
      events.Write(spdlog::level::warn, "refused (503)", "'-' refused (503): too many", t0);
    }
    events.Write(spdlog::level::info, "tunnels opened", "'CONNECT pypi.org:443' -> 1.2.3.4", t0);
    CHECK(Count(log.Text(), "refused (503): too many") == 3);
    // Nothing more until the interval ends; then one line with the counts, at the worst level.
    CHECK(events.Flush(t0 + 5s) == t0 + 10s);
    CHECK(Count(log.Text(), "\n") == 3);
    CHECK_FALSE(events.Flush(t0 + 10s).has_value());
    std::string text = log.Text();
    INFO(text);
    CHECK(Count(text, "\n") == 4);
    CHECK(text.find("warning egress sess_aaaaaaaaaaaa: 598 more connection events in 10.0 s, not "
                    "logged one by one: 597 refused (503), 1 tunnels opened") != std::string::npos);
    CHECK(text.size() < 1024);
    // A new interval has a new budget.
    events.Write(spdlog::level::warn, "refused (403)", "'x' refused (403): not listed", t0 + 11s);
    CHECK(Count(log.Text(), "refused (403): not listed") == 1);
    for (int i = 0; i < 5; ++i) {
      events.Write(spdlog::level::warn, "refused (403)", "'x' refused (403)", t0 + 12s);
    }
  }
  // The destructor writes what is still counted: nothing counted is ever dropped silently.
  CHECK(log.Text().find("3 more connection events") != std::string::npos);
}

TEST_CASE("egress log: events below the log level neither print nor use the budget", "[unit]") {
  testing::LogCapture log(spdlog::level::info);
  const auto t0 = EgressLog::Clock::now();
  EgressLog events("sess_bbbbbbbbbbbb", {2, 10s});
  for (int i = 0; i < 50; ++i) events.Write(spdlog::level::debug, "tunnels ended", "ended", t0);
  CHECK_FALSE(events.Flush(t0 + 1s).has_value());
  events.Write(spdlog::level::warn, "refused (403)", "first", t0);
  events.Write(spdlog::level::warn, "refused (403)", "second", t0);
  std::string text = log.Text();
  CHECK(text.find("first") != std::string::npos);
  CHECK(text.find("second") != std::string::npos);
  CHECK(text.find("ended") == std::string::npos);
}

}  // namespace
}  // namespace sandbox::egress::egress_log_test
