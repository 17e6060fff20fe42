// The sandbox syscall policy (DESIGN.md "seccomp"), as data, compiled once per process to a BPF
// program for the native architecture, and exportable as a Docker seccomp profile (JSON).
//
// The pieces: policy_spec.h (the policy as plain data), compile.h (libseccomp -> BPF, plus the
// ENOSYS prologue), docker_profile.h (the same policy in Docker's format), install.h (loading a
// compiled program; its raw call is the child-side one, safe between clone and exec).
#pragma once

#include <linux/filter.h>

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "runtime/base/result.h"

namespace sandbox::seccomp {

// A compiled filter, ready for seccomp(SECCOMP_SET_MODE_FILTER, 0, prog()) in a child between
// clone and exec (no allocation needed there). Copies and moves keep prog() pointing at their
// own instructions.
class BpfProgram {
 public:
  BpfProgram() = default;
  explicit BpfProgram(std::vector<sock_filter> filter) : filter_(std::move(filter)) { Point(); }
  BpfProgram(const BpfProgram& other) : filter_(other.filter_) { Point(); }
  BpfProgram(BpfProgram&& other) noexcept : filter_(std::move(other.filter_)) {
    Point();
    other.Point();
  }
  BpfProgram& operator=(const BpfProgram& other) {
    if (this != &other) {
      filter_ = other.filter_;
      Point();
    }
    return *this;
  }
  BpfProgram& operator=(BpfProgram&& other) noexcept {
    if (this != &other) {
      filter_ = std::move(other.filter_);
      Point();
      other.Point();
    }
    return *this;
  }

  const sock_fprog* prog() const { return &prog_; }
  size_t size() const { return filter_.size(); }
  const std::vector<sock_filter>& instructions() const { return filter_; }

 private:
  void Point() {
    prog_.len = static_cast<unsigned short>(filter_.size());
    prog_.filter = filter_.empty() ? nullptr : filter_.data();
  }

  std::vector<sock_filter> filter_;
  sock_fprog prog_{};
};

// The policy compiled for this process, built on first use and cached (thread-safe). Fails only
// if libseccomp cannot express the policy on this machine (e.g. not x86_64): the error names why.
Result<const BpfProgram*> CompiledPolicy();

// Has the first CompiledPolicy() load the program kept at `path` for this binary and libseccomp,
// or compile and keep it there (program_cache.h): for one-shot runs, which compile per process.
// Call before anything may call CompiledPolicy(); later calls change nothing.
void KeepCompiledPolicyIn(std::string path);

// The same policy as a Docker seccomp profile (for HostConfig.SecurityOpt "seccomp=<json>").
// See docker_profile.h for what Docker's format cannot carry.
std::string DockerProfileJson();

}  // namespace sandbox::seccomp
