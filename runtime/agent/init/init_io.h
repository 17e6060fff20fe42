// What the parts of sandbox-init's Agent (agent.cc, agent_workers.cc, agent_run.cc, and its
// PreloadZygote) share for their fds: init's log line, and reads and writes that never block it
// for good.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace sandbox::agent {

// One read of a child's pipe or the protocol's input.
inline constexpr size_t kReadChunk = 65536;
// Bounds one drain of a pipe, so a background writer cannot keep init draining forever.
inline constexpr int kMaxDrainReads = 256;

// One line on init's stderr: "sandbox-init: <message>".
void Log(const std::string& message);
// Reads what is available on a non-blocking fd. Returns false at EOF or on a hard error.
bool ReadAvailable(int fd, std::string& out, int max_reads);
// Writes all of `data`, waiting for POLLOUT when the fd is non-blocking. False when the fd is
// broken (the reader is gone).
bool WriteFully(int fd, std::string_view data);

}  // namespace sandbox::agent
