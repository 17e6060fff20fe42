// A classic-BPF interpreter for seccomp programs, so unit tests can ask "what does the compiled
// filter answer for this syscall and these arguments?" without forking or loading anything.
// Follows the kernel's checker semantics (net/core/filter.c, kernel/seccomp.c) for the
// instructions seccomp allows.
#pragma once

#include <linux/filter.h>
#include <linux/seccomp.h>

#include <cstdint>
#include <optional>
#include <vector>

namespace sandbox::seccomp::testing {

// The filter's return value (SECCOMP_RET_*), or nullopt for a program the kernel would reject
// at run time (out-of-range load, fall off the end, unsupported opcode).
std::optional<uint32_t> RunBpf(const std::vector<sock_filter>& program, const seccomp_data& data);

// seccomp_data for a native x86_64 call.
seccomp_data X86_64Call(uint32_t nr, std::vector<uint64_t> args = {});

}  // namespace sandbox::seccomp::testing
