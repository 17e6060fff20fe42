// Owning handles for libarchive objects, and libarchive's last error as an Error: what every
// writer and reader of tar files in rootfs/ needs.
#pragma once

#include <archive.h>
#include <archive_entry.h>

#include <cstddef>
#include <memory>
#include <string_view>

#include "runtime/base/result.h"

namespace sandbox::rootfs {

struct ArchiveReadFree {
  void operator()(archive* a) const { archive_read_free(a); }
};
struct ArchiveWriteFree {
  void operator()(archive* a) const { archive_write_free(a); }
};
struct ArchiveEntryFree {
  void operator()(archive_entry* e) const { archive_entry_free(e); }
};
using ArchiveReader = std::unique_ptr<archive, ArchiveReadFree>;
using ArchiveWriter = std::unique_ptr<archive, ArchiveWriteFree>;
using ArchiveEntry = std::unique_ptr<archive_entry, ArchiveEntryFree>;

// "<what>: <libarchive's message>", kInternal.
inline Error ArchiveError(archive* a, std::string_view what) {
  const char* message = archive_error_string(a);
  return MakeError(ErrorCode::kInternal, "{}: {}", what, message ? message : "libarchive error");
}

// The header of a generated file in an archive we write (a manifest, a config): regular, 0644,
// owned by root, mtime 0 so the same content gives the same bytes.
inline ArchiveEntry GeneratedFileEntry(const char* name, size_t size) {
  ArchiveEntry entry(archive_entry_new());
  archive_entry_set_pathname(entry.get(), name);
  archive_entry_set_filetype(entry.get(), AE_IFREG);
  archive_entry_set_perm(entry.get(), 0644);
  archive_entry_set_size(entry.get(), static_cast<la_int64_t>(size));
  archive_entry_set_mtime(entry.get(), 0, 0);
  return entry;
}

}  // namespace sandbox::rootfs
