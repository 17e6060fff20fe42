// Reading back the tars the recipe writes, entry by entry, with the header fields it must
// normalise (the tars themselves are made with tests/rootfs/archive_fixture.h).
#pragma once

#include <archive_entry.h>

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace sandbox::testing {

// What a tar entry holds, as read back.
struct ReadEntry {
  unsigned type = 0;
  unsigned perm = 0;
  std::string data;
  std::string symlink;
  std::string hardlink;
  int64_t uid = -1;
  int64_t gid = -1;
  std::string uname;
  int64_t mtime = 0;
  bool atime_set = false;
  int xattrs = 0;
};

// Every entry of the tar at `path`, in order, with its data (keep the tars small or filter:
// `keep_data` decides per name whether the data is kept).
std::vector<std::pair<std::string, ReadEntry>> ReadTar(
    const std::string& path, bool (*keep_data)(const std::string& name) = nullptr);

std::map<std::string, ReadEntry> AsMap(const std::vector<std::pair<std::string, ReadEntry>>& v);

}  // namespace sandbox::testing
