// Small file helpers on the host side (never for paths that sandboxed code controls).
#pragma once

#include <string>
#include <string_view>

#include "runtime/base/fd.h"
#include "runtime/base/result.h"

namespace sandbox {

Result<std::string> ReadFile(const std::string& path);
// Writes the whole string; fails on short writes.
Status WriteFile(const std::string& path, std::string_view content, int mode = 0644);
// Writes to a temp file next to `path`, fsyncs, then renames over it.
Status WriteFileAtomic(const std::string& path, std::string_view content, int mode = 0644);
// Copies `from` to `to` through a temp file beside `to` (sendfile, fsync, rename), so `to` is
// never half written.
Status CopyFileAtomic(const std::string& from, const std::string& to);
// write(2) until done, retrying EINTR.
Status WriteAll(int fd, std::string_view data);
// mkdir -p.
Status MakeDirs(const std::string& path, int mode = 0755);
// rm -rf that does not follow symlinks and stays on one filesystem.
Status RemoveTree(const std::string& path);

}  // namespace sandbox
