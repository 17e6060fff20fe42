// Tars for the recipe tests: write one from a list of entries, read one back entry by entry.
#pragma once

#include <archive_entry.h>

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace sandbox::testing {

// One entry of a tar made by a test.
struct TarEntry {
  std::string name;
  unsigned type = AE_IFREG;
  unsigned perm = 0644;
  std::string data;
  std::string link;  // symlink target, or hardlink target when `hardlink`
  bool hardlink = false;
  int64_t uid = 0;
  bool xattr = false;  // add user.test and security.capability
};

TarEntry Dir(std::string name, unsigned perm = 0755, int64_t uid = 0);
TarEntry File(std::string name, std::string data, unsigned perm = 0644);
TarEntry Symlink(std::string name, std::string target);
TarEntry Hardlink(std::string name, std::string target);
TarEntry Special(std::string name, unsigned type);  // AE_IFCHR, AE_IFIFO, ...

// Writes a pax tar (uname "builder", mtime 1700000000, atime set); fails the test on error.
void WriteTar(const std::string& path, const std::vector<TarEntry>& entries);

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
