// How much of the session's tmpfs mounts (/mnt/data, /tmp) its files use, reported with every run
// result (runtime/agent/PROTOCOL.md, `result`). Read from the filesystem's own count (statfs:
// blocks in use times the block size), so the cost is one system call whatever the tree holds;
// no walk, no time bound needed. A directory that is no tmpfs of its own (sandbox-init run on the
// host by the tests) has no such count: it is left out rather than reported as the host disk's.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace sandbox::agent {

// The bytes in use on the tmpfs mounted at `dir`, or nullopt when `dir` is no tmpfs.
std::optional<uint64_t> TmpfsUsedBytes(const std::string& dir);

}  // namespace sandbox::agent
