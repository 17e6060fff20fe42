// The compiled sandbox policy kept in a file, so a one-shot `mcp-sandbox run` loads the BPF
// program instead of building it with libseccomp on every call (about 1.5 ms of CPU per run;
// a server compiles once per start and never needs this).
//
// The program depends only on the policy, which is data compiled into this binary, and on the
// libseccomp that turns it into BPF. The key names both: this binary and the libseccomp loaded
// (its version and its file: device, inode, size, mtime), so a rebuild or a library update
// compiles again. The file is the euid's own (mode 0600, owner and mode checked on reading,
// replaced atomically), like the probes' verdict beside it (runtime/probe/probe_cache.h): another
// user can neither plant nor read a program. Any doubt (no file, another key, a malformed
// program) compiles.
#pragma once

#include <optional>
#include <string>

#include "runtime/base/result.h"
#include "seccomp/policy.h"

namespace sandbox::seccomp {

// What the compiled program depends on, one "name=value" a line.
std::string ProgramCacheKey();

// Where `state_dir` keeps the compiled program of this euid.
std::string ProgramCachePath(const std::string& state_dir);

// The program kept at `path` for `key`, or nullopt when there is none to trust.
std::optional<BpfProgram> LoadKeptProgram(const std::string& path, const std::string& key);

// Keeps `program` for `key` (best effort: a cache that cannot be written only costs a compile).
void KeepProgram(const std::string& path, const std::string& key, const BpfProgram& program);

// The sandbox policy's program: the one kept at `path` for this binary and libseccomp, or else
// compiled and kept there; `path` empty: compiled.
Result<BpfProgram> LoadOrCompileSandboxPolicy(const std::string& path);

// Removes the kept program (a sandbox failed to start after it was used).
void ForgetKeptProgram(const std::string& path);

}  // namespace sandbox::seccomp
