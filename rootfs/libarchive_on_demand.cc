// libarchive, loaded the first time an archive_* function is called rather than when the program
// starts. libarchive and the ten libraries it pulls in (acl, lzma, zstd, lz4, bz2, z, xml2, the
// two of ICU, nettle) cost every start of mcp-sandbox about 1.4 ms of CPU in the dynamic linker,
// yet only the image store's import and extraction and the image recipe's archive writer use
// it: a one-shot `run`, whose image is in the store already, never loads it. The functions below
// have libarchive's own signatures (so the callers include <archive.h> and <archive_entry.h> as
// usual) and forward to libarchive.so.13 opened with dlopen. When it cannot be opened, the
// constructors return null, the calls on a handle fail with ARCHIVE_FATAL, and
// archive_error_string and LibarchiveLoadError say why.
#include "rootfs/libarchive_on_demand.h"

#include <archive.h>
#include <archive_entry.h>

#include <cstdarg>
#include <cstdio>

#include "runtime/base/library_on_demand.h"

namespace sandbox::rootfs {
namespace {

// The entry points of libarchive.so.13 this program calls.
struct Libarchive {
  std::string error;  // empty once every entry point is bound
  decltype(&::archive_entry_acl_clear) entry_acl_clear = nullptr;
  decltype(&::archive_entry_filetype) entry_filetype = nullptr;
  decltype(&::archive_entry_free) entry_free = nullptr;
  decltype(&::archive_entry_hardlink) entry_hardlink = nullptr;
  decltype(&::archive_entry_mtime) entry_mtime = nullptr;
  decltype(&::archive_entry_mtime_nsec) entry_mtime_nsec = nullptr;
  decltype(&::archive_entry_new) entry_new = nullptr;
  decltype(&::archive_entry_pathname) entry_pathname = nullptr;
  decltype(&::archive_entry_perm) entry_perm = nullptr;
  decltype(&::archive_entry_set_fflags) entry_set_fflags = nullptr;
  decltype(&::archive_entry_set_filetype) entry_set_filetype = nullptr;
  decltype(&::archive_entry_set_gid) entry_set_gid = nullptr;
  decltype(&::archive_entry_set_gname) entry_set_gname = nullptr;
  decltype(&::archive_entry_set_hardlink) entry_set_hardlink = nullptr;
  decltype(&::archive_entry_set_mtime) entry_set_mtime = nullptr;
  decltype(&::archive_entry_set_pathname) entry_set_pathname = nullptr;
  decltype(&::archive_entry_set_perm) entry_set_perm = nullptr;
  decltype(&::archive_entry_set_size) entry_set_size = nullptr;
  decltype(&::archive_entry_set_symlink) entry_set_symlink = nullptr;
  decltype(&::archive_entry_set_uid) entry_set_uid = nullptr;
  decltype(&::archive_entry_set_uname) entry_set_uname = nullptr;
  decltype(&::archive_entry_size) entry_size = nullptr;
  decltype(&::archive_entry_sparse_count) entry_sparse_count = nullptr;
  decltype(&::archive_entry_symlink) entry_symlink = nullptr;
  decltype(&::archive_entry_unset_atime) entry_unset_atime = nullptr;
  decltype(&::archive_entry_unset_birthtime) entry_unset_birthtime = nullptr;
  decltype(&::archive_entry_unset_ctime) entry_unset_ctime = nullptr;
  decltype(&::archive_entry_xattr_clear) entry_xattr_clear = nullptr;
  decltype(&::archive_entry_xattr_count) entry_xattr_count = nullptr;
  decltype(&::archive_entry_xattr_next) entry_xattr_next = nullptr;
  decltype(&::archive_entry_xattr_reset) entry_xattr_reset = nullptr;
  decltype(&::archive_error_string) error_string = nullptr;
  decltype(&::archive_filter_bytes) filter_bytes = nullptr;
  decltype(&::archive_read_data) read_data = nullptr;
  decltype(&::archive_read_data_block) read_data_block = nullptr;
  decltype(&::archive_read_free) read_free = nullptr;
  decltype(&::archive_read_new) read_new = nullptr;
  decltype(&::archive_read_next_header) read_next_header = nullptr;
  decltype(&::archive_read_open) read_open = nullptr;
  decltype(&::archive_read_open_fd) read_open_fd = nullptr;
  decltype(&::archive_read_support_filter_gzip) read_support_filter_gzip = nullptr;
  decltype(&::archive_read_support_filter_none) read_support_filter_none = nullptr;
  decltype(&::archive_read_support_filter_zstd) read_support_filter_zstd = nullptr;
  decltype(&::archive_read_support_format_raw) read_support_format_raw = nullptr;
  decltype(&::archive_read_support_format_tar) read_support_format_tar = nullptr;
  decltype(&::archive_write_add_filter_none) write_add_filter_none = nullptr;
  decltype(&::archive_write_close) write_close = nullptr;
  decltype(&::archive_write_data) write_data = nullptr;
  decltype(&::archive_write_free) write_free = nullptr;
  decltype(&::archive_write_header) write_header = nullptr;
  decltype(&::archive_write_new) write_new = nullptr;
  decltype(&::archive_write_open2) write_open2 = nullptr;
  decltype(&::archive_write_open_fd) write_open_fd = nullptr;
  decltype(&::archive_write_set_bytes_in_last_block) write_set_bytes_in_last_block = nullptr;
  decltype(&::archive_write_set_bytes_per_block) write_set_bytes_per_block = nullptr;
  decltype(&::archive_write_set_format_pax_restricted) write_set_format_pax_restricted = nullptr;
  decltype(&::archive_set_error) set_error = nullptr;
};

Libarchive Open() {
  Libarchive lib;
  LibraryOnDemand library("libarchive.so.13");
  library.Bind("archive_entry_acl_clear", lib.entry_acl_clear);
  library.Bind("archive_entry_filetype", lib.entry_filetype);
  library.Bind("archive_entry_free", lib.entry_free);
  library.Bind("archive_entry_hardlink", lib.entry_hardlink);
  library.Bind("archive_entry_mtime", lib.entry_mtime);
  library.Bind("archive_entry_mtime_nsec", lib.entry_mtime_nsec);
  library.Bind("archive_entry_new", lib.entry_new);
  library.Bind("archive_entry_pathname", lib.entry_pathname);
  library.Bind("archive_entry_perm", lib.entry_perm);
  library.Bind("archive_entry_set_fflags", lib.entry_set_fflags);
  library.Bind("archive_entry_set_filetype", lib.entry_set_filetype);
  library.Bind("archive_entry_set_gid", lib.entry_set_gid);
  library.Bind("archive_entry_set_gname", lib.entry_set_gname);
  library.Bind("archive_entry_set_hardlink", lib.entry_set_hardlink);
  library.Bind("archive_entry_set_mtime", lib.entry_set_mtime);
  library.Bind("archive_entry_set_pathname", lib.entry_set_pathname);
  library.Bind("archive_entry_set_perm", lib.entry_set_perm);
  library.Bind("archive_entry_set_size", lib.entry_set_size);
  library.Bind("archive_entry_set_symlink", lib.entry_set_symlink);
  library.Bind("archive_entry_set_uid", lib.entry_set_uid);
  library.Bind("archive_entry_set_uname", lib.entry_set_uname);
  library.Bind("archive_entry_size", lib.entry_size);
  library.Bind("archive_entry_sparse_count", lib.entry_sparse_count);
  library.Bind("archive_entry_symlink", lib.entry_symlink);
  library.Bind("archive_entry_unset_atime", lib.entry_unset_atime);
  library.Bind("archive_entry_unset_birthtime", lib.entry_unset_birthtime);
  library.Bind("archive_entry_unset_ctime", lib.entry_unset_ctime);
  library.Bind("archive_entry_xattr_clear", lib.entry_xattr_clear);
  library.Bind("archive_entry_xattr_count", lib.entry_xattr_count);
  library.Bind("archive_entry_xattr_next", lib.entry_xattr_next);
  library.Bind("archive_entry_xattr_reset", lib.entry_xattr_reset);
  library.Bind("archive_error_string", lib.error_string);
  library.Bind("archive_filter_bytes", lib.filter_bytes);
  library.Bind("archive_read_data", lib.read_data);
  library.Bind("archive_read_data_block", lib.read_data_block);
  library.Bind("archive_read_free", lib.read_free);
  library.Bind("archive_read_new", lib.read_new);
  library.Bind("archive_read_next_header", lib.read_next_header);
  library.Bind("archive_read_open", lib.read_open);
  library.Bind("archive_read_open_fd", lib.read_open_fd);
  library.Bind("archive_read_support_filter_gzip", lib.read_support_filter_gzip);
  library.Bind("archive_read_support_filter_none", lib.read_support_filter_none);
  library.Bind("archive_read_support_filter_zstd", lib.read_support_filter_zstd);
  library.Bind("archive_read_support_format_raw", lib.read_support_format_raw);
  library.Bind("archive_read_support_format_tar", lib.read_support_format_tar);
  library.Bind("archive_write_add_filter_none", lib.write_add_filter_none);
  library.Bind("archive_write_close", lib.write_close);
  library.Bind("archive_write_data", lib.write_data);
  library.Bind("archive_write_free", lib.write_free);
  library.Bind("archive_write_header", lib.write_header);
  library.Bind("archive_write_new", lib.write_new);
  library.Bind("archive_write_open2", lib.write_open2);
  library.Bind("archive_write_open_fd", lib.write_open_fd);
  library.Bind("archive_write_set_bytes_in_last_block", lib.write_set_bytes_in_last_block);
  library.Bind("archive_write_set_bytes_per_block", lib.write_set_bytes_per_block);
  library.Bind("archive_write_set_format_pax_restricted", lib.write_set_format_pax_restricted);
  library.Bind("archive_set_error", lib.set_error);
  lib.error = library.error();
  return lib;
}

// Opened once, by the first caller (a function-local static: thread-safe).
const Libarchive& Loaded() {
  static const Libarchive lib = Open();
  return lib;
}

bool Usable() { return Loaded().error.empty(); }

}  // namespace

std::string LibarchiveLoadError() { return Loaded().error; }

}  // namespace sandbox::rootfs

// libarchive's own signatures (archive.h, archive_entry.h).
using sandbox::rootfs::Loaded;
using sandbox::rootfs::Usable;

extern "C" {

void archive_entry_acl_clear(struct archive_entry* a0) {
  if (Usable()) Loaded().entry_acl_clear(a0);
}

mode_t archive_entry_filetype(struct archive_entry* a0) {
  return Usable() ? Loaded().entry_filetype(a0) : 0;
}

void archive_entry_free(struct archive_entry* a0) {
  if (Usable()) Loaded().entry_free(a0);
}

const char* archive_entry_hardlink(struct archive_entry* a0) {
  return Usable() ? Loaded().entry_hardlink(a0) : nullptr;
}

time_t archive_entry_mtime(struct archive_entry* a0) {
  return Usable() ? Loaded().entry_mtime(a0) : 0;
}

long archive_entry_mtime_nsec(struct archive_entry* a0) {
  return Usable() ? Loaded().entry_mtime_nsec(a0) : 0;
}

struct archive_entry* archive_entry_new() {
  return Usable() ? Loaded().entry_new() : nullptr;
}

const char* archive_entry_pathname(struct archive_entry* a0) {
  return Usable() ? Loaded().entry_pathname(a0) : nullptr;
}

mode_t archive_entry_perm(struct archive_entry* a0) {
  return Usable() ? Loaded().entry_perm(a0) : 0;
}

void archive_entry_set_fflags(struct archive_entry* a0, unsigned long a1, unsigned long a2) {
  if (Usable()) Loaded().entry_set_fflags(a0, a1, a2);
}

void archive_entry_set_filetype(struct archive_entry* a0, unsigned int a1) {
  if (Usable()) Loaded().entry_set_filetype(a0, a1);
}

void archive_entry_set_gid(struct archive_entry* a0, la_int64_t a1) {
  if (Usable()) Loaded().entry_set_gid(a0, a1);
}

void archive_entry_set_gname(struct archive_entry* a0, const char* a1) {
  if (Usable()) Loaded().entry_set_gname(a0, a1);
}

void archive_entry_set_hardlink(struct archive_entry* a0, const char* a1) {
  if (Usable()) Loaded().entry_set_hardlink(a0, a1);
}

void archive_entry_set_mtime(struct archive_entry* a0, time_t a1, long a2) {
  if (Usable()) Loaded().entry_set_mtime(a0, a1, a2);
}

void archive_entry_set_pathname(struct archive_entry* a0, const char* a1) {
  if (Usable()) Loaded().entry_set_pathname(a0, a1);
}

void archive_entry_set_perm(struct archive_entry* a0, mode_t a1) {
  if (Usable()) Loaded().entry_set_perm(a0, a1);
}

void archive_entry_set_size(struct archive_entry* a0, la_int64_t a1) {
  if (Usable()) Loaded().entry_set_size(a0, a1);
}

void archive_entry_set_symlink(struct archive_entry* a0, const char* a1) {
  if (Usable()) Loaded().entry_set_symlink(a0, a1);
}

void archive_entry_set_uid(struct archive_entry* a0, la_int64_t a1) {
  if (Usable()) Loaded().entry_set_uid(a0, a1);
}

void archive_entry_set_uname(struct archive_entry* a0, const char* a1) {
  if (Usable()) Loaded().entry_set_uname(a0, a1);
}

la_int64_t archive_entry_size(struct archive_entry* a0) {
  return Usable() ? Loaded().entry_size(a0) : 0;
}

int archive_entry_sparse_count(struct archive_entry* a0) {
  return Usable() ? Loaded().entry_sparse_count(a0) : ARCHIVE_FATAL;
}

const char* archive_entry_symlink(struct archive_entry* a0) {
  return Usable() ? Loaded().entry_symlink(a0) : nullptr;
}

void archive_entry_unset_atime(struct archive_entry* a0) {
  if (Usable()) Loaded().entry_unset_atime(a0);
}

void archive_entry_unset_birthtime(struct archive_entry* a0) {
  if (Usable()) Loaded().entry_unset_birthtime(a0);
}

void archive_entry_unset_ctime(struct archive_entry* a0) {
  if (Usable()) Loaded().entry_unset_ctime(a0);
}

void archive_entry_xattr_clear(struct archive_entry* a0) {
  if (Usable()) Loaded().entry_xattr_clear(a0);
}

int archive_entry_xattr_count(struct archive_entry* a0) {
  return Usable() ? Loaded().entry_xattr_count(a0) : ARCHIVE_FATAL;
}

int archive_entry_xattr_next(struct archive_entry* a0, const char** a1, const void** a2,
                             size_t* a3) {
  return Usable() ? Loaded().entry_xattr_next(a0, a1, a2, a3) : ARCHIVE_FATAL;
}

int archive_entry_xattr_reset(struct archive_entry* a0) {
  return Usable() ? Loaded().entry_xattr_reset(a0) : ARCHIVE_FATAL;
}

const char* archive_error_string(struct archive* a0) {
  return Usable() ? Loaded().error_string(a0) : Loaded().error.c_str();
}

la_int64_t archive_filter_bytes(struct archive* a0, int a1) {
  return Usable() ? Loaded().filter_bytes(a0, a1) : 0;
}

la_ssize_t archive_read_data(struct archive* a0, void* a1, size_t a2) {
  return Usable() ? Loaded().read_data(a0, a1, a2) : ARCHIVE_FATAL;
}

int archive_read_data_block(struct archive* a0, const void** a1, size_t* a2, la_int64_t* a3) {
  return Usable() ? Loaded().read_data_block(a0, a1, a2, a3) : ARCHIVE_FATAL;
}

int archive_read_free(struct archive* a0) {
  return Usable() ? Loaded().read_free(a0) : ARCHIVE_FATAL;
}

struct archive* archive_read_new() {
  return Usable() ? Loaded().read_new() : nullptr;
}

int archive_read_next_header(struct archive* a0, struct archive_entry** a1) {
  return Usable() ? Loaded().read_next_header(a0, a1) : ARCHIVE_FATAL;
}

int archive_read_open(struct archive* a0, void* a1, archive_open_callback* a2,
                      archive_read_callback* a3, archive_close_callback* a4) {
  return Usable() ? Loaded().read_open(a0, a1, a2, a3, a4) : ARCHIVE_FATAL;
}

int archive_read_open_fd(struct archive* a0, int a1, size_t a2) {
  return Usable() ? Loaded().read_open_fd(a0, a1, a2) : ARCHIVE_FATAL;
}

int archive_read_support_filter_gzip(struct archive* a0) {
  return Usable() ? Loaded().read_support_filter_gzip(a0) : ARCHIVE_FATAL;
}

int archive_read_support_filter_none(struct archive* a0) {
  return Usable() ? Loaded().read_support_filter_none(a0) : ARCHIVE_FATAL;
}

int archive_read_support_filter_zstd(struct archive* a0) {
  return Usable() ? Loaded().read_support_filter_zstd(a0) : ARCHIVE_FATAL;
}

int archive_read_support_format_raw(struct archive* a0) {
  return Usable() ? Loaded().read_support_format_raw(a0) : ARCHIVE_FATAL;
}

int archive_read_support_format_tar(struct archive* a0) {
  return Usable() ? Loaded().read_support_format_tar(a0) : ARCHIVE_FATAL;
}

int archive_write_add_filter_none(struct archive* a0) {
  return Usable() ? Loaded().write_add_filter_none(a0) : ARCHIVE_FATAL;
}

int archive_write_close(struct archive* a0) {
  return Usable() ? Loaded().write_close(a0) : ARCHIVE_FATAL;
}

la_ssize_t archive_write_data(struct archive* a0, const void* a1, size_t a2) {
  return Usable() ? Loaded().write_data(a0, a1, a2) : ARCHIVE_FATAL;
}

int archive_write_free(struct archive* a0) {
  return Usable() ? Loaded().write_free(a0) : ARCHIVE_FATAL;
}

int archive_write_header(struct archive* a0, struct archive_entry* a1) {
  return Usable() ? Loaded().write_header(a0, a1) : ARCHIVE_FATAL;
}

struct archive* archive_write_new() {
  return Usable() ? Loaded().write_new() : nullptr;
}

int archive_write_open2(struct archive* a0, void* a1, archive_open_callback* a2,
                        archive_write_callback* a3, archive_close_callback* a4,
                        archive_free_callback* a5) {
  return Usable() ? Loaded().write_open2(a0, a1, a2, a3, a4, a5) : ARCHIVE_FATAL;
}

int archive_write_open_fd(struct archive* a0, int a1) {
  return Usable() ? Loaded().write_open_fd(a0, a1) : ARCHIVE_FATAL;
}

int archive_write_set_bytes_in_last_block(struct archive* a0, int a1) {
  return Usable() ? Loaded().write_set_bytes_in_last_block(a0, a1) : ARCHIVE_FATAL;
}

int archive_write_set_bytes_per_block(struct archive* a0, int a1) {
  return Usable() ? Loaded().write_set_bytes_per_block(a0, a1) : ARCHIVE_FATAL;
}

int archive_write_set_format_pax_restricted(struct archive* a0) {
  return Usable() ? Loaded().write_set_format_pax_restricted(a0) : ARCHIVE_FATAL;
}

// libarchive has no va_list form of it: the message is formatted here and passed as "%s".
void archive_set_error(struct archive* a0, int a1, const char* a2, ...) {
  if (!Usable()) return;
  char message[1024];
  va_list arguments;
  va_start(arguments, a2);
  std::vsnprintf(message, sizeof message, a2, arguments);
  va_end(arguments);
  Loaded().set_error(a0, a1, "%s", message);
}

}  // extern "C"
