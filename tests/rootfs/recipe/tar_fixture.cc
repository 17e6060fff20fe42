#include "tests/rootfs/recipe/tar_fixture.h"

#include <archive.h>
#include <sys/sysmacros.h>

#include <catch2/catch.hpp>

namespace sandbox::testing {

TarEntry Dir(std::string name, unsigned perm, int64_t uid) {
  TarEntry e;
  e.name = std::move(name);
  e.type = AE_IFDIR;
  e.perm = perm;
  e.uid = uid;
  return e;
}

TarEntry File(std::string name, std::string data, unsigned perm) {
  TarEntry e;
  e.name = std::move(name);
  e.data = std::move(data);
  e.perm = perm;
  return e;
}

TarEntry Symlink(std::string name, std::string target) {
  TarEntry e;
  e.name = std::move(name);
  e.type = AE_IFLNK;
  e.perm = 0777;
  e.link = std::move(target);
  return e;
}

TarEntry Hardlink(std::string name, std::string target) {
  TarEntry e;
  e.name = std::move(name);
  e.link = std::move(target);
  e.hardlink = true;
  return e;
}

TarEntry Special(std::string name, unsigned type) {
  TarEntry e;
  e.name = std::move(name);
  e.type = type;
  e.perm = 0666;
  return e;
}

void WriteTar(const std::string& path, const std::vector<TarEntry>& entries) {
  archive* a = archive_write_new();
  archive_write_set_format_pax(a);
  REQUIRE(archive_write_open_filename(a, path.c_str()) == ARCHIVE_OK);
  for (const auto& e : entries) {
    archive_entry* entry = archive_entry_new();
    archive_entry_set_pathname(entry, e.name.c_str());
    archive_entry_set_filetype(entry, e.type);
    archive_entry_set_perm(entry, e.perm);
    archive_entry_set_uid(entry, e.uid);
    archive_entry_set_gid(entry, e.uid);
    archive_entry_set_uname(entry, "builder");
    archive_entry_set_mtime(entry, 1700000000, 0);
    archive_entry_set_atime(entry, 1700000001, 0);
    if (e.type == AE_IFCHR) archive_entry_set_rdev(entry, makedev(1, 3));
    if (e.type == AE_IFLNK) archive_entry_set_symlink(entry, e.link.c_str());
    if (e.hardlink) archive_entry_set_hardlink(entry, e.link.c_str());
    if (e.xattr) {
      archive_entry_xattr_add_entry(entry, "user.test", "v", 1);
      archive_entry_xattr_add_entry(entry, "security.capability", "\x01\x02", 2);
    }
    archive_entry_set_size(entry, e.hardlink ? 0 : static_cast<la_int64_t>(e.data.size()));
    REQUIRE(archive_write_header(a, entry) == ARCHIVE_OK);
    if (!e.data.empty() && !e.hardlink) archive_write_data(a, e.data.data(), e.data.size());
    archive_entry_free(entry);
  }
  REQUIRE(archive_write_close(a) == ARCHIVE_OK);
  archive_write_free(a);
}

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
