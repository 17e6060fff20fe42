// The sandbox syscall policy (DESIGN.md "seccomp"), as data, compiled once per process to a BPF
// program for the native architecture, and exportable as a Docker seccomp profile (JSON).
#pragma once

#include <linux/filter.h>

#include <string>
#include <vector>

#include "runtime/base/result.h"

namespace sandbox::seccomp {

// A compiled filter, ready for prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog()) in a child
// between clone and exec (no allocation needed there).
class BpfProgram {
 public:
  BpfProgram() = default;
  explicit BpfProgram(std::vector<sock_filter> filter) : filter_(std::move(filter)) {
    prog_.len = static_cast<unsigned short>(filter_.size());
    prog_.filter = filter_.data();
  }
  const sock_fprog* prog() const { return &prog_; }
  size_t size() const { return filter_.size(); }

 private:
  std::vector<sock_filter> filter_;
  sock_fprog prog_{};
};

// The policy compiled for this process, built on first use and cached (thread-safe).
Result<const BpfProgram*> CompiledPolicy();

// The same policy as a Docker seccomp profile (for HostConfig.SecurityOpt "seccomp=<json>").
std::string DockerProfileJson();

}  // namespace sandbox::seccomp
