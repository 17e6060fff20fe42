// SIGTERM, SIGINT and SIGHUP as a readable descriptor (the self-pipe trick), so a transport
// can poll for them next to its input; SIGPIPE ignored so a vanished client means EPIPE, not
// death. The previous handlers come back when the object goes away.
#pragma once

#include <signal.h>

#include <chrono>
#include <optional>
#include <string>

#include "runtime/base/fd.h"
#include "runtime/base/result.h"

namespace sandbox::mcp {

class ShutdownSignals {
 public:
  ShutdownSignals() = default;
  ~ShutdownSignals();
  ShutdownSignals(const ShutdownSignals&) = delete;
  ShutdownSignals& operator=(const ShutdownSignals&) = delete;

  // One instance per process at a time.
  Status Install();
  // Readable once a signal arrived (-1 before Install()).
  int fd() const { return read_end_.get(); }
  // After fd() became readable: the signal's name ("Terminated"), consuming it.
  std::string Take();
  // Waits until a signal arrives or Wake() is called; returns Take()'s text ("" for Wake()).
  std::string Wait();
  // The same, for at most `timeout`: nullopt when nothing came.
  std::optional<std::string> WaitFor(std::chrono::milliseconds timeout);
  // Makes Wait() return (from another thread), as if a signal came.
  void Wake();

 private:
  static constexpr int kSignals[] = {SIGTERM, SIGINT, SIGHUP};
  struct sigaction saved_[3] = {};
  bool installed_ = false;
  Fd read_end_;
  Fd write_end_;
};

}  // namespace sandbox::mcp
