// The one bidirectional byte stream between the server and a sandbox's agent. The namespace
// backend gives a socketpair; the Docker backend a hijacked attach connection with multiplexed
// frames. The agent protocol (runtime/agent/PROTOCOL.md) runs over either unchanged.
#pragma once

#include <chrono>
#include <cstddef>
#include <string_view>

#include "runtime/base/result.h"

namespace sandbox {

using Clock = std::chrono::steady_clock;

class ByteStream {
 public:
  virtual ~ByteStream() = default;
  // Reads up to `len` bytes of the agent's protocol output. Returns 0 at EOF (the agent is
  // gone) and an error with code kTimeout when `deadline` passes first. One reader at a time.
  virtual Result<size_t> Read(char* buf, size_t len, Clock::time_point deadline) = 0;
  // Writes all of `data` to the agent. Safe to call from any thread (serialized inside).
  virtual Status Write(std::string_view data) = 0;
  // Closes the write side (the agent sees EOF on its input).
  virtual void CloseWrite() = 0;
};

}  // namespace sandbox
