// Fuzz target: the agent protocol's frame decoder (runtime/agent/wire.h), which both sides run
// on what the other sends, and init's reading of a request: its fields read as
// Agent::HandleRequest reads them, and its path normalized as FileOps does before any file
// operation. The input is a byte stream; its first byte picks how it is cut into reads, since
// frames arrive split and merged arbitrarily.
// Invariants: nothing throws or crashes; every decoded message is an object; a payload is the
// size its message announced; a decoded message (with its payload, as a binary frame) encodes to
// frames that decode to the same message; a normalized path is absolute.
#include <stdlib.h>

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

#include "runtime/agent/init/file_ops.h"
#include "runtime/agent/wire.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

using sandbox::agent::Json;

const sandbox::agent::FileOps& Files() {
  static const sandbox::agent::FileOps* files = [] {
    char path[] = "/tmp/mcp-sandbox-fuzz-agent-XXXXXX";
    if (mkdtemp(path) == nullptr) throw std::runtime_error("mkdtemp failed");
    return new sandbox::agent::FileOps(std::string(path), std::string(path) + "/tmp");
  }();
  return *files;
}

// What init reads of a request, and the host of an answer, by field name.
void ReadFields(const Json& message) {
  using namespace sandbox::agent;
  (void)GetUint(message, "id");
  std::string type = GetString(message, "type");
  (void)GetString(message, "kind", "python");
  (void)GetString(message, "code");
  (void)GetDouble(message, "timeout_s", 60);
  (void)GetUint(message, "max_output_bytes");
  (void)GetBool(message, "fresh");
  (void)GetBool(message, "overwrite");
  (void)GetUint(message, "mode", 0644);
  (void)GetUint(message, "write");
  (void)GetUint(message, "offset");
  (void)GetInt(message, "stream");
  (void)ErrorCodeFromName(GetString(message, "code"));
  for (const char* key : {"stdout", "stderr"}) (void)GetBytes(message, key);
  for (const char* key : {"path", "cwd"}) {
    std::string path = GetString(message, key);
    auto normalized = Files().Normalize(path);
    if (normalized) FUZZ_CHECK(!normalized->empty() && normalized->front() == '/');
  }
}

void CheckRoundTrip(const sandbox::agent::Message& message) {
  bool announced = message.json.contains(sandbox::agent::kPayloadField);
  std::string frame = announced ? sandbox::agent::EncodeFrame(message.json, message.payload)
                                : sandbox::agent::EncodeFrame(message.json);
  sandbox::agent::FrameDecoder decoder;
  decoder.Append(frame);
  auto again = decoder.Next();
  FUZZ_CHECK(again.has_value());
  FUZZ_CHECK(again->has_value());
  FUZZ_CHECK((*again)->json == message.json);
  FUZZ_CHECK((*again)->payload == message.payload);
  FUZZ_CHECK(decoder.buffered() == 0);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  size_t read_size = 1 + data[0] % 64;  // 1..64 bytes per read; a few cases read all at once
  if (data[0] >= 192) read_size = size;
  std::string_view stream(reinterpret_cast<const char*>(data) + 1, size - 1);
  sandbox::agent::FrameDecoder decoder;
  while (true) {
    size_t take = std::min(read_size, stream.size());
    decoder.Append(stream.substr(0, take));
    stream.remove_prefix(take);
    for (;;) {
      auto next = decoder.Next();
      if (!next) return 0;  // the stream is unusable from here on, as both sides treat it
      if (!next->has_value()) break;
      const sandbox::agent::Message& message = **next;
      FUZZ_CHECK(message.json.is_object());
      if (message.json.contains(sandbox::agent::kPayloadField)) {
        FUZZ_CHECK(sandbox::agent::GetUint(message.json, sandbox::agent::kPayloadField) ==
                   message.payload.size());
      } else {
        FUZZ_CHECK(message.payload.empty());
      }
      ReadFields(message.json);
      CheckRoundTrip(message);
    }
    if (stream.empty()) break;
  }
  return 0;
}
