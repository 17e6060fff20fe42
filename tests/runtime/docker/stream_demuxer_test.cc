#include "runtime/docker/stream_demuxer.h"

#include <random>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

namespace stream_demuxer_test {

using sandbox::docker::StreamDemuxer;
using sandbox::docker::StreamType;

namespace {

std::string Frame(uint8_t stream, const std::string& payload) {
  std::string frame = {static_cast<char>(stream), 0, 0, 0};
  uint32_t size = static_cast<uint32_t>(payload.size());
  frame.push_back(static_cast<char>(size >> 24));
  frame.push_back(static_cast<char>(size >> 16 & 0xff));
  frame.push_back(static_cast<char>(size >> 8 & 0xff));
  frame.push_back(static_cast<char>(size & 0xff));
  return frame + payload;
}

struct Collected {
  std::string out, err, system;
  size_t pieces = 0;
};

StreamDemuxer::Sink Into(Collected& collected) {
  return [&collected](StreamType stream, std::string_view payload) {
    REQUIRE_FALSE(payload.empty());
    ++collected.pieces;
    switch (stream) {
      case StreamType::kStdout:
        collected.out.append(payload);
        break;
      case StreamType::kStderr:
        collected.err.append(payload);
        break;
      case StreamType::kSystemError:
        collected.system.append(payload);
        break;
    }
  };
}

// A stream with every kind of frame, including an empty one and a payload bigger than 255.
std::string MixedStream() {
  return Frame(1, "{\"hello\":1}\n") + Frame(2, "agent: started\n") + Frame(1, "") +
         Frame(1, std::string(300, 'x')) + Frame(0, "stdin-echo") + Frame(2, "tail") +
         Frame(3, "container stopped unexpectedly");
}

}  // namespace

TEST_CASE("demuxer splits a whole stream into its three streams", "[unit]") {
  StreamDemuxer demuxer;
  Collected got;
  REQUIRE(demuxer.Feed(MixedStream(), Into(got)));
  CHECK(got.out == "{\"hello\":1}\n" + std::string(300, 'x') + "stdin-echo");
  CHECK(got.err == "agent: started\ntail");
  CHECK(got.system == "container stopped unexpectedly");
  CHECK(demuxer.at_frame_boundary());
}

TEST_CASE("demuxer reassembles frames split at every byte boundary", "[unit]") {
  const std::string stream = MixedStream();
  StreamDemuxer whole;
  Collected expected;
  REQUIRE(whole.Feed(stream, Into(expected)));
  for (size_t a = 0; a <= stream.size(); ++a) {
    for (size_t b = a; b <= stream.size(); b += 7) {  // two cuts: every a, a spread of b
      StreamDemuxer demuxer;
      Collected got;
      REQUIRE(demuxer.Feed(std::string_view(stream).substr(0, a), Into(got)));
      REQUIRE(demuxer.Feed(std::string_view(stream).substr(a, b - a), Into(got)));
      REQUIRE(demuxer.Feed(std::string_view(stream).substr(b), Into(got)));
      INFO("cuts at " << a << " and " << b);
      REQUIRE(got.out == expected.out);
      REQUIRE(got.err == expected.err);
      REQUIRE(got.system == expected.system);
      REQUIRE(demuxer.at_frame_boundary());
    }
  }
}

TEST_CASE("demuxer handles one byte at a time and random chunks", "[unit]") {
  const std::string stream = MixedStream() + MixedStream();
  StreamDemuxer bytewise;
  Collected one;
  for (char c : stream) {
    REQUIRE(bytewise.Feed(std::string_view(&c, 1), Into(one)));
    // Between the bytes of a header the demuxer is mid-frame.
  }
  CHECK(one.out.size() == 2 * (12 + 300 + 10));
  std::mt19937 rng(42);
  for (int round = 0; round < 200; ++round) {
    StreamDemuxer demuxer;
    Collected got;
    size_t pos = 0;
    while (pos < stream.size()) {
      size_t n = std::uniform_int_distribution<size_t>(1, 40)(rng);
      REQUIRE(demuxer.Feed(std::string_view(stream).substr(pos, n), Into(got)));
      pos += n;
    }
    REQUIRE(got.out == one.out);
    REQUIRE(got.err == one.err);
    REQUIRE(got.system == one.system);
  }
}

TEST_CASE("demuxer hands payload on before the frame is complete", "[unit]") {
  StreamDemuxer demuxer;
  Collected got;
  std::string frame = Frame(1, "abcdef");
  REQUIRE(demuxer.Feed(frame.substr(0, 10), Into(got)));
  CHECK(got.out == "ab");
  CHECK_FALSE(demuxer.at_frame_boundary());
  REQUIRE(demuxer.Feed(frame.substr(10), Into(got)));
  CHECK(got.out == "abcdef");
  CHECK(demuxer.at_frame_boundary());
}

TEST_CASE("demuxer refuses a stream that is not multiplexed", "[unit]") {
  StreamDemuxer demuxer;
  Collected got;
  // What a TTY container would send: raw text.
  auto fed = demuxer.Feed("Python 3.11.2\n", Into(got));
  REQUIRE_FALSE(fed);
  CHECK_THAT(fed.error().message, Catch::Contains("corrupt"));
  CHECK_FALSE(demuxer.Feed(Frame(1, "ok"), Into(got)));  // stays failed
  StreamDemuxer bad_type;
  CHECK_FALSE(bad_type.Feed(Frame(4, "x"), Into(got)));
}

}  // namespace stream_demuxer_test
