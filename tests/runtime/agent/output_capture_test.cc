// init's output bookkeeping without processes: the budget per stream, the truncation flag, and
// when output events go out (by size, by time, at the end).
#include "runtime/agent/init/output_capture.h"

#include <string>
#include <utility>
#include <vector>

#include <catch2/catch.hpp>

namespace sandbox::agent::output_capture_test {
namespace {

using Events = std::vector<std::pair<int, std::string>>;

struct Recorder {
  Events events;
  auto Sink() {
    return [this](int stream, std::string_view chunk) { events.emplace_back(stream, chunk); };
  }
};

TEST_CASE("output capture keeps each stream up to its budget and flags the rest", "[unit]") {
  auto t0 = OutputCapture::Clock::now();
  OutputCapture capture(10, t0);
  capture.Add(1, "0123456");
  capture.Add(1, "789abc");  // 3 bytes past the budget
  capture.Add(2, "err");
  CHECK(capture.kept(1) == "0123456789");
  CHECK(capture.truncated(1));
  CHECK(capture.kept(2) == "err");
  CHECK_FALSE(capture.truncated(2));
  capture.Add(1, "more");  // nothing more is kept once full
  CHECK(capture.kept(1) == "0123456789");
}

TEST_CASE("output events are batched by size and by time, each byte sent once", "[unit]") {
  auto t0 = OutputCapture::Clock::now();
  OutputCapture capture(1 << 20, t0);
  Recorder sent;
  capture.Add(1, "hello ");
  capture.Flush(t0 + std::chrono::milliseconds(10), false, sent.Sink());
  CHECK(sent.events.empty());  // too little, too soon: no frame per write
  REQUIRE(capture.NextFlush() == t0 + OutputCapture::kEventInterval);

  capture.Flush(t0 + OutputCapture::kEventInterval, false, sent.Sink());
  REQUIRE(sent.events == Events{{1, "hello "}});  // the interval passed
  CHECK_FALSE(capture.NextFlush());               // nothing pending

  auto t1 = t0 + OutputCapture::kEventInterval;
  capture.Add(2, std::string(OutputCapture::kEventBytes, 'x'));
  capture.Flush(t1 + std::chrono::milliseconds(1), false, sent.Sink());
  REQUIRE(sent.events.size() == 2);  // enough pending: at once
  CHECK(sent.events[1].first == 2);
  CHECK(sent.events[1].second.size() == OutputCapture::kEventBytes);

  capture.Add(1, "world");
  capture.Flush(t1 + std::chrono::milliseconds(2), /*force=*/true, sent.Sink());
  REQUIRE(sent.events.size() == 3);  // the end of a run sends what is left
  CHECK(sent.events[2] == std::pair<int, std::string>{1, "world"});
  CHECK(capture.kept(1) == "hello world");  // the result still carries all of it
}

TEST_CASE("a stderr tail keeps only its last bytes", "[unit]") {
  std::string tail;
  AppendTail(tail, "abcdef", 4);
  CHECK(tail == "cdef");
  AppendTail(tail, "gh", 4);
  CHECK(tail == "efgh");
  AppendTail(tail, "", 4);
  CHECK(tail == "efgh");
}

}  // namespace
}  // namespace sandbox::agent::output_capture_test
