#include "rootfs/recipe/oci_archive_writer.h"

#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <memory>
#include <set>
#include <string_view>
#include <vector>

#include "rootfs/digest.h"
#include "rootfs/libarchive_handles.h"
#include "runtime/base/fd.h"
#include "runtime/base/files.h"

namespace sandbox::rootfs {
namespace {

constexpr size_t kCopyBufferBytes = 1 << 20;

using Entry = ArchiveEntry;

// The destination of a libarchive writer: a file, hashed as it is written.
struct HashingSink {
  int fd = -1;
  Sha256 hash;
  uint64_t bytes = 0;
  Error error;
  bool failed = false;
};

la_ssize_t WriteToSink(archive*, void* client, const void* buffer, size_t length) {
  auto* sink = static_cast<HashingSink*>(client);
  auto status = WriteAll(sink->fd, {static_cast<const char*>(buffer), length});
  if (!status) {
    sink->error = std::move(status.error());
    sink->failed = true;
    return -1;
  }
  sink->hash.Update(buffer, length);
  sink->bytes += length;
  return static_cast<la_ssize_t>(length);
}

// A pax writer (ustar headers unless a name or size needs an extension) into `sink`. Blocks
// of 10240 bytes are tar's default; the padding is part of the hashed bytes.
Result<ArchiveWriter> OpenWriter(HashingSink* sink) {
  ArchiveWriter writer(archive_write_new());
  if (!writer) return Fail(ErrorCode::kInternal, "archive_write_new failed");
  if (archive_write_set_format_pax_restricted(writer.get()) != ARCHIVE_OK ||
      archive_write_add_filter_none(writer.get()) != ARCHIVE_OK ||
      archive_write_open2(writer.get(), sink, nullptr, WriteToSink, nullptr, nullptr) !=
          ARCHIVE_OK) {
    return Fail(ArchiveError(writer.get(), "open tar writer"));
  }
  return writer;
}

Status FinishWriter(archive* writer, HashingSink* sink) {
  if (archive_write_close(writer) != ARCHIVE_OK) {
    if (sink->failed) return Fail(sink->error);
    return Fail(ArchiveError(writer, "close tar writer"));
  }
  return {};
}

Status WriteHeader(archive* writer, archive_entry* entry, const HashingSink& sink) {
  if (archive_write_header(writer, entry) < ARCHIVE_WARN) {
    if (sink.failed) return Fail(sink.error);
    return Fail(ArchiveError(writer, archive_entry_pathname(entry)));
  }
  return {};
}

Status WriteData(archive* writer, const void* data, size_t size, const HashingSink& sink) {
  if (archive_write_data(writer, data, size) != static_cast<la_ssize_t>(size)) {
    if (sink.failed) return Fail(sink.error);
    return Fail(ArchiveError(writer, "write tar data"));
  }
  return {};
}

// "./usr/bin" -> "usr/bin"; "./" and "." -> "".
std::string_view StripDotSlash(std::string_view name) {
  while (name.substr(0, 2) == "./") name.remove_prefix(2);
  if (name == ".") return {};
  return name;
}

// Makes `entry` (read from mmdebstrap) fit for the layer; false when it is dropped. Names of
// dropped entries go to `dropped`, so hardlinks to them are dropped too.
bool NormalizeLayerEntry(archive_entry* entry, std::set<std::string>* dropped) {
  const char* raw_name = archive_entry_pathname(entry);
  if (raw_name == nullptr) return false;
  std::string name(StripDotSlash(raw_name));
  if (name.empty() || name == "/") return false;  // the root directory itself
  // A hardlink ('1' entry) may come without a file type; it names a file of the same tar.
  bool is_hardlink = archive_entry_hardlink(entry) != nullptr;
  switch (archive_entry_filetype(entry)) {
    case AE_IFREG:
    case AE_IFDIR:
    case AE_IFLNK:
      break;
    default:
      if (!is_hardlink) {  // character and block devices, fifos, sockets
        dropped->insert(std::move(name));
        return false;
      }
  }
  archive_entry_set_pathname(entry, name.c_str());
  if (is_hardlink) {
    std::string target(StripDotSlash(archive_entry_hardlink(entry)));
    if (dropped->count(target) > 0) return false;
    archive_entry_set_hardlink(entry, target.c_str());
    archive_entry_set_size(entry, 0);  // the data travels with the first name only
  }
  mode_t perm = archive_entry_perm(entry);
  if (archive_entry_filetype(entry) != AE_IFDIR) perm &= ~static_cast<mode_t>(S_ISUID | S_ISGID);
  archive_entry_set_perm(entry, perm);
  archive_entry_xattr_clear(entry);
  archive_entry_acl_clear(entry);
  archive_entry_set_fflags(entry, 0, 0);
  archive_entry_set_uname(entry, nullptr);
  archive_entry_set_gname(entry, nullptr);
  archive_entry_unset_atime(entry);
  archive_entry_unset_ctime(entry);
  archive_entry_unset_birthtime(entry);
  return true;
}

Status AddMemoryFile(archive* writer, const HashingSink& sink, const std::string& name,
                     std::string_view content) {
  Entry entry = GeneratedFileEntry(name.c_str(), content.size());
  SBX_TRY(WriteHeader(writer, entry.get(), sink));
  return WriteData(writer, content.data(), content.size(), sink);
}

Status AddDirectory(archive* writer, const HashingSink& sink, const std::string& name) {
  Entry entry(archive_entry_new());
  archive_entry_set_pathname(entry.get(), name.c_str());
  archive_entry_set_filetype(entry.get(), AE_IFDIR);
  archive_entry_set_perm(entry.get(), 0755);
  archive_entry_set_mtime(entry.get(), 0, 0);
  return WriteHeader(writer, entry.get(), sink);
}

Status AddFileFrom(archive* writer, const HashingSink& sink, const std::string& name,
                   const std::string& source, uint64_t size) {
  Fd fd(::open(source.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) return FailSys("open", source);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return FailSys("fstat", source);
  if (static_cast<uint64_t>(st.st_size) != size) {
    return Fail(ErrorCode::kInternal, "{} has {} bytes, expected {}", source, st.st_size, size);
  }
  Entry entry(archive_entry_new());
  archive_entry_set_pathname(entry.get(), name.c_str());
  archive_entry_set_filetype(entry.get(), AE_IFREG);
  archive_entry_set_perm(entry.get(), 0644);
  archive_entry_set_size(entry.get(), static_cast<la_int64_t>(size));
  archive_entry_set_mtime(entry.get(), 0, 0);
  SBX_TRY(WriteHeader(writer, entry.get(), sink));
  std::vector<char> buffer(kCopyBufferBytes);
  uint64_t left = size;
  while (left > 0) {
    ssize_t n = ::read(fd.get(), buffer.data(), buffer.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return FailSys("read", source);
    if (n == 0) return Fail(ErrorCode::kInternal, "{} shrank while being archived", source);
    size_t chunk =
        static_cast<uint64_t>(n) < left ? static_cast<size_t>(n) : static_cast<size_t>(left);
    SBX_TRY(WriteData(writer, buffer.data(), chunk, sink));
    left -= chunk;
  }
  return {};
}

}  // namespace

Result<Blob> WriteLayerFromRootfsTar(int tar_fd, const std::string& layer_path) {
  ArchiveReader reader(archive_read_new());
  if (!reader) return Fail(ErrorCode::kInternal, "archive_read_new failed");
  // Only tar, uncompressed: this is mmdebstrap's own output, and nothing else is expected.
  if (archive_read_support_format_tar(reader.get()) != ARCHIVE_OK ||
      archive_read_support_filter_none(reader.get()) != ARCHIVE_OK ||
      archive_read_open_fd(reader.get(), tar_fd, kCopyBufferBytes) != ARCHIVE_OK) {
    return Fail(ArchiveError(reader.get(), "read rootfs tarball"));
  }

  Fd out(::open(layer_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (!out) return FailSys("open", layer_path);
  HashingSink sink;
  sink.fd = out.get();
  SBX_ASSIGN_OR_RETURN(ArchiveWriter writer, OpenWriter(&sink));

  std::vector<char> buffer(kCopyBufferBytes);
  std::set<std::string> dropped;
  for (;;) {
    archive_entry* entry = nullptr;
    int rc = archive_read_next_header(reader.get(), &entry);
    if (rc == ARCHIVE_EOF) break;
    if (rc < ARCHIVE_WARN) return Fail(ArchiveError(reader.get(), "read rootfs tarball"));
    if (!NormalizeLayerEntry(entry, &dropped)) continue;
    SBX_TRY(WriteHeader(writer.get(), entry, sink));
    // Hardlinks and non-regular entries carry no data.
    if (archive_entry_filetype(entry) != AE_IFREG || archive_entry_size(entry) == 0) continue;
    for (;;) {
      la_ssize_t n = archive_read_data(reader.get(), buffer.data(), buffer.size());
      if (n < 0) return Fail(ArchiveError(reader.get(), archive_entry_pathname(entry)));
      if (n == 0) break;
      SBX_TRY(WriteData(writer.get(), buffer.data(), static_cast<size_t>(n), sink));
    }
  }
  SBX_TRY(FinishWriter(writer.get(), &sink));
  // No fsync: the layer is a scratch file, copied into the archive (which is synced) and
  // unlinked at once; syncing it first wrote its 1.8 GiB to disk for nothing.
  return Blob{sink.hash.FinishHex(), sink.bytes};
}

Status WriteOciArchive(const OciArchiveParts& parts, const std::string& path) {
  Fd out(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (!out) return FailSys("open", path);
  HashingSink sink;
  sink.fd = out.get();
  SBX_ASSIGN_OR_RETURN(ArchiveWriter writer, OpenWriter(&sink));
  archive* w = writer.get();

  SBX_TRY(AddMemoryFile(w, sink, "oci-layout", kOciLayoutJson));
  SBX_TRY(AddMemoryFile(w, sink, "index.json", parts.index_json));
  SBX_TRY(AddMemoryFile(w, sink, "manifest.json", parts.docker_manifest_json));
  SBX_TRY(AddDirectory(w, sink, "blobs/"));
  SBX_TRY(AddDirectory(w, sink, "blobs/sha256/"));
  SBX_TRY(
      AddMemoryFile(w, sink, "blobs/sha256/" + Sha256Hex(parts.config_json), parts.config_json));
  SBX_TRY(AddMemoryFile(w, sink, "blobs/sha256/" + Sha256Hex(parts.manifest_json),
                        parts.manifest_json));
  SBX_TRY(
      AddFileFrom(w, sink, "blobs/sha256/" + parts.layer.hex, parts.layer_path, parts.layer.size));
  SBX_TRY(FinishWriter(w, &sink));
  if (::fsync(out.get()) != 0) return FailSys("fsync", path);
  return {};
}

}  // namespace sandbox::rootfs
