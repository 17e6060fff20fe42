// The wire codec, the byte stream and the client's defences, without any agent process: a
// thread on the other end of a socketpair plays the agent.
#include "runtime/agent/wire.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include "runtime/agent/host/agent_client.h"
#include "runtime/agent/host/fd_byte_stream.h"
#include "runtime/agent/messages.h"
#include "runtime/agent/mime.h"
#include "runtime/agent/run_limits.h"
#include "runtime/base/base64.h"
#include "runtime/base/files.h"

namespace wire_test {

using namespace std::chrono_literals;
using sandbox::Base64Encode;
using sandbox::ErrorCode;
using sandbox::Fd;
using sandbox::agent::EncodeFrame;
using sandbox::agent::FrameDecoder;
using sandbox::agent::Json;

namespace {

std::pair<Fd, Fd> SocketPair() {
  int sv[2];
  REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
  return {Fd(sv[0]), Fd(sv[1])};
}

// The first request the host sent on `fd`, as a fake init reads it; nullopt on EOF or a bad frame.
std::optional<Json> ReadRequest(int fd) {
  FrameDecoder decoder;
  char buf[4096];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n <= 0) return std::nullopt;
    decoder.Append(std::string_view(buf, static_cast<size_t>(n)));
    auto next = decoder.Next();
    if (!next) return std::nullopt;
    if (next->has_value()) return (*next)->json;
  }
}

// A client whose fake agent has said hello: `agent` is the agent's end of the socket.
struct ReadyClient {
  ReadyClient() : ReadyClient(SocketPair()) {}
  Fd agent;
  sandbox::FdByteStream stream;
  sandbox::AgentClient client{stream};

 private:
  explicit ReadyClient(std::pair<Fd, Fd> ends)
      : agent(std::move(ends.second)), stream(std::move(ends.first)) {
    REQUIRE(sandbox::WriteAll(
        agent.get(),
        EncodeFrame(
            Json{{"type", "hello"}, {"id", 0}, {"protocol", sandbox::agent::kProtocolVersion}})));
    REQUIRE(client.WaitReady(5s));
  }
};

}  // namespace

TEST_CASE("frames survive being split at every byte and merged", "[unit]") {
  std::string stream;
  for (int i = 0; i < 3; ++i)
    stream += EncodeFrame(Json{{"type", "output"}, {"id", i}, {"s", "é\n"}});
  for (size_t step = 1; step <= stream.size(); ++step) {
    FrameDecoder decoder;
    int seen = 0;
    for (size_t offset = 0; offset < stream.size(); offset += step) {
      decoder.Append(std::string_view(stream).substr(offset, step));
      for (;;) {
        auto next = decoder.Next();
        REQUIRE(next);
        if (!next->has_value()) break;
        CHECK((**next).json["id"] == seen);
        CHECK((**next).json["s"] == "é\n");
        CHECK((**next).payload.empty());
        ++seen;
      }
    }
    CHECK(seen == 3);
    CHECK(decoder.buffered() == 0);
  }
}

namespace {

// A frame's length word, as bytes.
std::string LengthWord(uint32_t word) {
  std::string bytes;
  for (int shift : {24, 16, 8, 0}) bytes += static_cast<char>((word >> shift) & 0xff);
  return bytes;
}

// Everything `stream` decodes to, fed `step` bytes at a time; the first error ends it.
struct Decoded {
  std::vector<sandbox::agent::Message> messages;
  std::optional<sandbox::Error> error;
  size_t buffered = 0;
};
Decoded DecodeAll(std::string_view stream, size_t step, size_t max_frame_bytes = 1024) {
  FrameDecoder decoder(max_frame_bytes);
  Decoded decoded;
  for (size_t offset = 0; offset < stream.size(); offset += step) {
    decoder.Append(stream.substr(offset, step));
    for (;;) {
      auto next = decoder.Next();
      if (!next) {
        decoded.error = next.error();
        return decoded;
      }
      if (!next->has_value()) break;
      decoded.messages.push_back(std::move(**next));
    }
  }
  decoded.buffered = decoder.buffered();
  return decoded;
}

}  // namespace

TEST_CASE("binary payloads survive being split at every byte and merged with JSON frames",
          "[unit]") {
  // Raw bytes of every value, including what looks like a length word or a JSON frame.
  std::string bytes;
  for (int i = 0; i < 256; ++i) bytes += static_cast<char>(i);
  bytes += std::string("\x80\x00\x00\x05{}", 6);
  std::string stream = EncodeFrame(Json{{"type", "file"}, {"id", 1}}, bytes) +
                       EncodeFrame(Json{{"type", "ok"}, {"id", 2}}) +
                       EncodeFrame(Json{{"type", "write_chunk"}, {"id", 3}}, "x") +
                       EncodeFrame(Json{{"type", "file"}, {"id", 4}}, "");
  for (size_t step = 1; step <= stream.size(); ++step) {
    Decoded decoded = DecodeAll(stream, step);
    REQUIRE_FALSE(decoded.error);
    REQUIRE(decoded.messages.size() == 4);
    CHECK(decoded.messages[0].json["id"] == 1);
    CHECK(decoded.messages[0].json["bytes"] == bytes.size());
    CHECK(decoded.messages[0].payload == bytes);
    CHECK(decoded.messages[1].json["id"] == 2);
    CHECK(decoded.messages[1].payload.empty());
    CHECK(decoded.messages[2].payload == "x");
    CHECK(decoded.messages[3].json["bytes"] == 0);  // an empty payload is a frame of 0 bytes
    CHECK(decoded.messages[3].payload.empty());
    CHECK(decoded.buffered == 0);
  }
}

TEST_CASE("malformed binary frames are protocol errors, judged as early as possible", "[unit]") {
  const std::string header = EncodeFrame(Json{{"type", "file"}, {"bytes", 3}});
  struct Case {
    const char* what;
    std::string stream;
  };
  for (const auto& [what, stream] : std::vector<Case>{
           {"a binary frame without its header", LengthWord(0x80000003) + "abc"},
           {"a binary frame without its header, announced by nothing yet", LengthWord(0x80000000)},
           {"a binary frame of another size than announced", header + LengthWord(0x80000004)},
           {"a JSON frame where the binary one was due", header + EncodeFrame(Json{{"id", 1}})},
           {"an oversized binary frame",
            EncodeFrame(Json{{"bytes", 1024}}) + LengthWord(0x80000000 | 1025)},
           {"a header announcing more than a frame may hold", EncodeFrame(Json{{"bytes", 1025}})},
           {"a header announcing a negative size", EncodeFrame(Json{{"bytes", -1}})},
           {"a header announcing a size that is not a number", EncodeFrame(Json{{"bytes", "3"}})},
           {"a header announcing a fraction", EncodeFrame(Json{{"bytes", 1.5}})},
       }) {
    INFO(what);
    for (size_t step : {size_t{1}, stream.size()}) {
      Decoded decoded = DecodeAll(stream, step);
      REQUIRE(decoded.error);
      CHECK(decoded.error->code == ErrorCode::kInvalidArgument);
      CHECK(decoded.messages.empty());
    }
  }
}

TEST_CASE("a truncated binary frame yields nothing until its last byte", "[unit]") {
  std::string stream = EncodeFrame(Json{{"type", "file"}, {"id", 9}}, std::string(100, 'z'));
  for (size_t cut = 0; cut < stream.size(); ++cut) {
    Decoded decoded = DecodeAll(std::string_view(stream).substr(0, cut), 7);
    CHECK_FALSE(decoded.error);
    CHECK(decoded.messages.empty());
  }
  Decoded whole = DecodeAll(stream, 7);
  REQUIRE(whole.messages.size() == 1);
  CHECK(whole.messages[0].payload == std::string(100, 'z'));
}

TEST_CASE("the frame limit is judged per frame, and a sender can tell before sending", "[unit]") {
  using sandbox::agent::ExceedsFrameLimit;
  using sandbox::agent::kMaxFrameBytes;
  CHECK_FALSE(ExceedsFrameLimit(EncodeFrame(Json{{"type", "ok"}})));
  CHECK_FALSE(ExceedsFrameLimit(EncodeFrame(Json{{"type", "file"}}, "abc")));
  std::string at_limit(kMaxFrameBytes, 'a');
  CHECK_FALSE(ExceedsFrameLimit(EncodeFrame(Json{{"type", "write_chunk"}}, at_limit)));
  at_limit += 'a';
  CHECK(ExceedsFrameLimit(EncodeFrame(Json{{"type", "write_chunk"}}, at_limit)));
  CHECK(ExceedsFrameLimit(EncodeFrame(Json{{"code", at_limit}})));
  // The default decoder takes a payload of exactly the limit.
  std::string stream = EncodeFrame(Json{{"type", "file"}}, std::string_view(at_limit).substr(1));
  FrameDecoder decoder;
  decoder.Append(stream);
  auto next = decoder.Next();
  REQUIRE(next);
  REQUIRE(next->has_value());
  CHECK((**next).payload.size() == kMaxFrameBytes);
}

TEST_CASE("an oversized frame is refused from its header alone", "[unit]") {
  FrameDecoder decoder(1024);
  decoder.Append(std::string("\x00\x00\x04\x01", 4));  // 1025 bytes announced, none sent
  auto next = decoder.Next();
  REQUIRE_FALSE(next);
  CHECK(next.error().code == ErrorCode::kInvalidArgument);

  FrameDecoder huge;
  huge.Append("\xff\xff\xff\xff");
  CHECK_FALSE(huge.Next());
}

TEST_CASE("a frame that is not a JSON object is an error, not an exception", "[unit]") {
  for (std::string body : {"[1,2]", "{\"a\":", "42", "\xff\xfe"}) {
    FrameDecoder decoder;
    std::string frame(4, '\0');
    frame[3] = static_cast<char>(body.size());
    decoder.Append(frame + body);
    CHECK_FALSE(decoder.Next());
  }
}

TEST_CASE("a frame nested 100 000 deep is refused before parsing, either direction", "[unit]") {
  // The same decoder reads init's frames on the host and the host's frames in init; a frame
  // from a subverted sandbox must not overflow the server's stack in whatever recurses later.
  for (std::string inner : {std::string(100000, '[') + std::string(100000, ']'), [] {
                              std::string text;
                              for (int i = 0; i < 100000; ++i) text += "{\"a\":";
                              return text + "1" + std::string(100000, '}');
                            }()}) {
    std::string body = R"({"type":"result","id":1,"figures":)" + inner + "}";
    FrameDecoder decoder;
    std::string frame;
    auto size = static_cast<uint32_t>(body.size());
    for (int shift : {24, 16, 8, 0}) frame += static_cast<char>((size >> shift) & 0xff);
    decoder.Append(frame + body);
    auto next = decoder.Next();
    REQUIRE_FALSE(next);
    CHECK(next.error().code == ErrorCode::kInvalidArgument);
    CHECK(next.error().message.find("nested deeper") != std::string::npos);
  }
}

TEST_CASE("invalid UTF-8 in a string field does not throw when encoding", "[unit]") {
  std::string frame = EncodeFrame(Json{{"code", std::string("a\xff"
                                                            "b")}});
  FrameDecoder decoder;
  decoder.Append(frame);
  auto next = decoder.Next();
  REQUIRE(next);
  REQUIRE(next->has_value());
  CHECK((**next).json["code"] ==
        "a\xef\xbf\xbd"
        "b");  // U+FFFD
}

TEST_CASE("typed field reads fall back instead of throwing", "[unit]") {
  Json message{{"s", "text"}, {"n", -3}, {"u", 7}, {"d", 1.5}, {"b", true}};
  using namespace sandbox::agent;
  CHECK(GetString(message, "s") == "text");
  CHECK(GetString(message, "n", "fb") == "fb");
  CHECK(GetInt(message, "n") == -3);
  CHECK(GetInt(message, "s", 9) == 9);
  CHECK(GetUint(message, "n", 5) == 5);  // negative is not a uint
  CHECK(GetUint(message, "u") == 7);
  CHECK(GetDouble(message, "d") == 1.5);
  CHECK(GetDouble(message, "u") == 7);
  CHECK(GetBool(message, "b"));
  CHECK_FALSE(GetBool(message, "missing"));
  CHECK(GetString(Json::array(), "s", "x") == "x");
  CHECK_FALSE(GetBytes(Json{{"c", "***"}}, "c"));
  CHECK(*GetBytes(Json{{"c", "aGk="}}, "c") == "hi");
  CHECK(ErrorCodeFromName("artifact_too_large") == ErrorCode::kArtifactTooLarge);
  CHECK(ErrorCodeFromName("bogus") == ErrorCode::kInternal);
}

TEST_CASE("mime types by extension", "[unit]") {
  using sandbox::agent::MimeTypeForPath;
  CHECK(MimeTypeForPath("/mnt/data/chart.PNG") == "image/png");
  CHECK(MimeTypeForPath("a.b/data.csv") == "text/csv");
  CHECK(MimeTypeForPath("report.pdf") == "application/pdf");
  CHECK(MimeTypeForPath("noext") == "application/octet-stream");
  CHECK(MimeTypeForPath("dir.d/noext") == "application/octet-stream");
  CHECK(MimeTypeForPath(".bashrc") == "application/octet-stream");
  CHECK(MimeTypeForPath("x.") == "application/octet-stream");
}

TEST_CASE("FdByteStream: deadline, EOF, and a dead peer is an error, not SIGPIPE", "[unit]") {
  auto [ours, theirs] = SocketPair();
  sandbox::FdByteStream stream(std::move(ours));
  char buf[16];
  auto start = sandbox::Clock::now();
  auto timed_out = stream.Read(buf, sizeof buf, sandbox::Clock::now() + 50ms);
  REQUIRE_FALSE(timed_out);
  CHECK(timed_out.error().code == ErrorCode::kTimeout);
  CHECK(sandbox::Clock::now() - start >= 50ms);

  REQUIRE(sandbox::WriteAll(theirs.get(), "abc"));
  auto got = stream.Read(buf, sizeof buf, sandbox::Clock::now() + 1s);
  REQUIRE(got);
  CHECK(std::string(buf, *got) == "abc");
  REQUIRE(stream.Write("xyz"));
  char peer[8];
  CHECK(::read(theirs.get(), peer, sizeof peer) == 3);

  stream.CloseWrite();
  CHECK(::read(theirs.get(), peer, sizeof peer) == 0);  // the agent sees EOF
  CHECK_FALSE(stream.Write("more"));

  theirs.Reset();
  auto eof = stream.Read(buf, sizeof buf, sandbox::Clock::now() + 1s);
  REQUIRE(eof);
  CHECK(*eof == 0);

  // Pipes: writing to a pipe nobody reads fails with EPIPE and the process lives on.
  int to_agent[2], from_agent[2];
  REQUIRE(::pipe2(to_agent, O_CLOEXEC) == 0);
  REQUIRE(::pipe2(from_agent, O_CLOEXEC) == 0);
  sandbox::FdByteStream piped{Fd(from_agent[0]), Fd(to_agent[1])};
  ::close(to_agent[0]);
  ::close(from_agent[1]);
  auto failed = piped.Write("data");
  REQUIRE_FALSE(failed);
  CHECK(failed.error().code == ErrorCode::kSandboxUnavailable);
}

TEST_CASE("AgentClient: no hello in time, malformed frames and EOF mean unavailable", "[unit]") {
  {
    auto [ours, theirs] = SocketPair();
    sandbox::FdByteStream stream(std::move(ours));
    sandbox::AgentClient client(stream);
    auto ready = client.WaitReady(100ms);
    REQUIRE_FALSE(ready);
    CHECK(ready.error().code == ErrorCode::kSandboxUnavailable);
  }
  {
    auto [ours, theirs] = SocketPair();
    sandbox::FdByteStream stream(std::move(ours));
    sandbox::AgentClient client(stream);
    REQUIRE(sandbox::WriteAll(theirs.get(), std::string("\x7f\xff\xff\xff", 4)));
    auto ready = client.WaitReady(5s);
    REQUIRE_FALSE(ready);
    CHECK(ready.error().code == ErrorCode::kSandboxUnavailable);
    CHECK_FALSE(client.Stat("x"));  // the stream stays unusable
  }
  {
    auto [ours, theirs] = SocketPair();
    sandbox::FdByteStream stream(std::move(ours));
    sandbox::AgentClient client(stream);
    REQUIRE(sandbox::WriteAll(theirs.get(),
                              EncodeFrame(Json{{"type", "hello"},
                                               {"id", 0},
                                               {"protocol", sandbox::agent::kProtocolVersion},
                                               {"init_pid", 1},
                                               {"worker_pid", 2},
                                               {"python", "3.11.2"}})));
    REQUIRE(client.WaitReady(5s));
    CHECK(client.info().worker_pid == 2);
    // The agent answers a stat with a stale answer, an output event of another id, then the
    // real error: the client keeps only the last.
    std::thread agent([fd = theirs.get()] {
      char buf[4096];
      // Only to wait for the request; its bytes do not matter.
      if (::read(fd, buf, sizeof buf) < 0) return;
      std::string answers =
          EncodeFrame(Json{{"type", "ok"}, {"id", 999}}) +
          EncodeFrame(Json{{"type", "output"}, {"id", 5}, {"stream", 1}}) +
          EncodeFrame(Json{
              {"type", "error"}, {"id", 1}, {"code", "not_found"}, {"message", "stat(x): ENOENT"}});
      (void)sandbox::WriteAll(fd, answers);
    });
    auto stat = client.Stat("x");
    agent.join();
    REQUIRE_FALSE(stat);
    CHECK(stat.error().code == ErrorCode::kNotFound);
    CHECK(stat.error().message == "stat(x): ENOENT");
    theirs.Reset();
    auto gone = client.Stat("y");
    REQUIRE_FALSE(gone);
    CHECK(gone.error().code == ErrorCode::kSandboxUnavailable);
  }
}

TEST_CASE("AgentClient bounds a run result from init: figures and artifacts", "[unit]") {
  // init runs inside the sandbox; a subverted one may report anything. The host keeps at most
  // kMaxRunFigures figures and kMaxRunArtifacts artifacts (issue #12).
  ReadyClient ready;
  auto& client = ready.client;
  std::thread agent([fd = ready.agent.get()] {
    std::optional<Json> request = ReadRequest(fd);
    if (!request) return;
    Json figures = Json::array();
    Json artifacts = Json::array();
    for (int i = 0; i < 5000; ++i) {
      std::string path = "/mnt/data/f" + std::to_string(i) + ".png";
      figures.push_back(Json{{"path", path}, {"png", Base64Encode("png")}});
      artifacts.push_back(Json{{"path", path}, {"size", 3}, {"mime", "image/png"}});
    }
    Json result = {{"type", "result"},      {"id", (*request)["id"]}, {"exit_code", 0},
                   {"stdout", ""},          {"stderr", ""},           {"figures", figures},
                   {"artifacts", artifacts}};
    (void)sandbox::WriteAll(fd, EncodeFrame(result));
  });
  sandbox::RunRequest request;
  request.code = "pass";
  request.timeout_s = 30;
  auto run = client.Run(request);
  agent.join();
  REQUIRE(run);
  CHECK(run->figures.size() == sandbox::agent::kMaxRunFigures);
  CHECK(run->artifacts.size() == sandbox::agent::kMaxRunArtifacts);
  CHECK(run->figures.front().png == "png");
}

TEST_CASE("AgentClient: a warm-up's limit leaves out the time it was held back", "[unit]") {
  // Issue #38: a pool refill capped while calls run (runtime/cgroup/background_cpu.h) takes
  // longer in wall time; the stretches it was capped must not count against its limit. The
  // agent answers the warm request 400 ms late: past a 150 ms limit, within it once the 400 ms
  // said to have been capped are left out.
  for (bool held_back : {false, true}) {
    ReadyClient ready;
    auto& client = ready.client;
    std::thread agent([fd = ready.agent.get()] {
      std::optional<Json> request = ReadRequest(fd);
      if (!request) return;
      std::this_thread::sleep_for(400ms);
      uint64_t id = (*request)["id"].get<uint64_t>();
      (void)sandbox::WriteAll(fd,
                              EncodeFrame(sandbox::agent::WarmAnswer{{"numpy"}, {}}.ToJson(id)));
    });
    auto started = std::chrono::steady_clock::now();
    auto capped = [&] { return std::chrono::steady_clock::now() - started; };  // all of it
    auto warmed = held_back ? client.WaitWarm(150ms, capped) : client.WaitWarm(150ms);
    agent.join();
    INFO((held_back ? "capped all along" : "never capped"));
    CHECK(warmed.has_value() == held_back);
    if (held_back) CHECK(client.preload().imported == std::vector<std::string>{"numpy"});
  }
}

TEST_CASE("AgentClient passes output events' payloads on as raw bytes, then the rest", "[unit]") {
  ReadyClient ready;
  auto& client = ready.client;
  const std::string captured(
      "\xff\x00"
      "a\n"
      "bc",
      6);  // not UTF-8, with a NUL
  std::thread agent([fd = ready.agent.get(), &captured] {
    std::optional<Json> request = ReadRequest(fd);
    if (!request) return;
    Json id = (*request)["id"];
    std::string frames =
        EncodeFrame(Json{{"type", "output"}, {"id", id}, {"stream", 1}}, captured.substr(0, 4)) +
        EncodeFrame(Json{{"type", "output"}, {"id", id}, {"stream", 3}}, "ignored") +
        EncodeFrame(Json{{"type", "result"},
                         {"id", id},
                         {"exit_code", 0},
                         {"stdout", Base64Encode(captured)},
                         {"stderr", ""}});
    (void)sandbox::WriteAll(fd, frames);
  });
  std::vector<std::string> chunks;
  sandbox::RunRequest request;
  request.code = "pass";
  request.timeout_s = 30;
  auto run = client.Run(request, [&](int which, std::string_view chunk) {
    CHECK(which == 1);
    chunks.emplace_back(chunk);
  });
  agent.join();
  REQUIRE(run);
  CHECK(run->stdout_text == captured);
  REQUIRE(chunks.size() == 2);
  CHECK(chunks[0] == captured.substr(0, 4));  // the event's bytes, exactly
  CHECK(chunks[1] == "bc");                   // what the events did not carry, from the result
}

}  // namespace wire_test
