#include "tests/rootfs/recipe/tar_fixture.h"

#include <archive.h>
#include <sys/sysmacros.h>

#include <catch2/catch.hpp>

namespace sandbox::testing {

std::vector<std::pair<std::string, ReadEntry>> ReadTar(const std::string& path,
                                                       bool (*keep_data)(const std::string&)) {
  std::vector<std::pair<std::string, ReadEntry>> out;
  archive* a = archive_read_new();
  archive_read_support_format_tar(a);
  REQUIRE(archive_read_open_filename(a, path.c_str(), 1 << 20) == ARCHIVE_OK);
  archive_entry* entry = nullptr;
  int rc = ARCHIVE_OK;
  while ((rc = archive_read_next_header(a, &entry)) == ARCHIVE_OK) {
    std::string name = archive_entry_pathname(entry);
    ReadEntry e;
    e.type = archive_entry_filetype(entry);
    e.perm = archive_entry_perm(entry);
    if (const char* s = archive_entry_symlink(entry)) e.symlink = s;
    if (const char* h = archive_entry_hardlink(entry)) e.hardlink = h;
    if (const char* u = archive_entry_uname(entry)) e.uname = u;
    e.uid = archive_entry_uid(entry);
    e.gid = archive_entry_gid(entry);
    e.mtime = archive_entry_mtime(entry);
    e.atime_set = archive_entry_atime_is_set(entry) != 0;
    e.xattrs = archive_entry_xattr_count(entry);
    if (keep_data == nullptr || keep_data(name)) {
      char buf[65536];
      la_ssize_t n;
      while ((n = archive_read_data(a, buf, sizeof buf)) > 0) {
        e.data.append(buf, static_cast<size_t>(n));
      }
    }
    out.emplace_back(std::move(name), std::move(e));
  }
  CHECK(rc == ARCHIVE_EOF);
  archive_read_free(a);
  return out;
}

std::map<std::string, ReadEntry> AsMap(const std::vector<std::pair<std::string, ReadEntry>>& v) {
  return {v.begin(), v.end()};
}

}  // namespace sandbox::testing
