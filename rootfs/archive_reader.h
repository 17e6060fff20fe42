// Reading tar streams with libarchive, hardened: only the tar format and the gzip and zstd
// filters are enabled (never the *_all() variants: most libarchive CVEs are in RAR, 7z, cpio
// and friends). Compression is sniffed from magic bytes, not trusted from media types.
// Nothing here writes to disk except DecompressToFd; entries are applied by safe_extract.
#pragma once

#include <archive.h>
#include <archive_entry.h>

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "rootfs/digest.h"
#include "runtime/base/result.h"

namespace sandbox::rootfs {

// A byte range of an open file: a blob inside an outer tar, or a whole blob file. The fd is
// borrowed from whoever opened it (ImageSource).
struct FileSection {
  int fd = -1;
  uint64_t offset = 0;
  uint64_t size = 0;
};

enum class Compression { kNone, kGzip, kZstd };
std::string_view CompressionName(Compression compression);

// gzip 1f 8b, zstd 28 b5 2f fd, anything else is taken as a plain tar.
Compression SniffCompression(std::string_view head);
Result<Compression> SniffCompression(const FileSection& section);

struct LayerDigests {
  std::string blob_hex;     // sha256 of the bytes as stored (compressed)
  std::string diff_id_hex;  // sha256 of the uncompressed tar: the config's diff_id
  uint64_t compressed_bytes = 0;
  uint64_t uncompressed_bytes = 0;
};

// One layer as a stream of tar entries, hashing both the stored and the uncompressed bytes
// while they pass, so every byte is read and hashed exactly once. Reading, hashing and
// decompressing run in a thread of their own, a few MiB ahead of the entries being written
// (as `gzip -d | tar -x` would); entries and data are consumed on the caller's thread.
class LayerReader {
 public:
  // Fails as soon as the uncompressed stream exceeds `max_uncompressed_bytes` (a gzip bomb
  // stops there, not when the disk is full).
  static Result<std::unique_ptr<LayerReader>> Open(const FileSection& section,
                                                   uint64_t max_uncompressed_bytes);
  ~LayerReader();  // stops the reading thread
  LayerReader(const LayerReader&) = delete;
  LayerReader& operator=(const LayerReader&) = delete;

  // The next entry, or nullptr after the last. Valid until the next call.
  Result<archive_entry*> NextEntry();

  struct Block {
    const void* data = nullptr;
    size_t size = 0;     // 0: the entry's data is done
    int64_t offset = 0;  // position in the file (sparse entries skip ranges)
  };
  // The next block of the current entry's data.
  Result<Block> NextDataBlock();

  // Reads what follows the tar end marker (padding is part of the diff_id) and returns the
  // digests. Call once, after NextEntry() returned nullptr.
  Result<LayerDigests> Finish();

  Compression compression() const { return compression_; }
  // Called on the caller's thread with the stored bytes read so far, about once per MiB.
  void set_progress(std::function<void(uint64_t)> progress) { progress_ = std::move(progress); }

 private:
  using Chunk = std::vector<char>;
  struct ArchiveDeleter {
    void operator()(archive* a) const { archive_read_free(a); }
  };

  LayerReader() = default;
  Status OpenDecompressor();
  Status OpenTar();

  // The reading thread: fills chunks of the uncompressed stream until its end or an error.
  void Produce();
  Result<size_t> ProduceChunk(Chunk& chunk);
  // pread of the stored bytes, hashed; the decompressor's libarchive callback.
  static la_ssize_t ReadStored(archive* a, void* self, const void** buffer);
  la_ssize_t ReadStoredInto(char* buffer, size_t size);
  // The tar reader's libarchive callback: the next chunk from the reading thread.
  static la_ssize_t ReadChunk(archive* a, void* self, const void** buffer);
  la_ssize_t NextChunk(const void** buffer);
  Error TarError(std::string_view what);

  FileSection section_;
  Compression compression_ = Compression::kNone;
  uint64_t max_uncompressed_ = 0;
  std::unique_ptr<archive, ArchiveDeleter> decompressor_;  // raw "format" + one filter
  std::unique_ptr<archive, ArchiveDeleter> tar_;

  // Owned by the reading thread until it is done.
  Chunk stored_buffer_;
  std::optional<Error> stored_error_;  // why ReadStoredInto failed
  uint64_t stored_read_ = 0;
  uint64_t uncompressed_read_ = 0;
  Sha256 stored_hash_;
  Sha256 uncompressed_hash_;
  std::thread producer_;

  // Shared, under mutex_.
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<Chunk> ready_;  // filled, in stream order
  std::vector<Chunk> spare_;
  bool produced_all_ = false;
  bool stop_ = false;
  std::optional<Error> producer_error_;
  uint64_t stored_progress_ = 0;
  LayerDigests digests_;  // set when produced_all_

  // The caller's thread.
  Chunk current_;  // the chunk libarchive's tar reader is parsing
  std::optional<Error> callback_error_;
  std::function<void(uint64_t)> progress_;
};

// A member of an outer tar (an OCI archive or a docker save), located for pread.
struct TarMember {
  std::string name;  // as stored
  enum class Type { kFile, kDirectory, kSymlink, kHardlink, kOther } type = Type::kOther;
  uint64_t data_offset = 0;  // where the member's bytes start in the file
  uint64_t size = 0;
  std::string link_target;  // symlinks and hardlinks
  bool sparse = false;      // bytes are not contiguous: unusable as a blob
};

// Lists the members of an uncompressed tar file without reading their data (it seeks).
Result<std::vector<TarMember>> ListTarMembers(int fd, uint64_t max_members);

// Decompresses a gzip or zstd stream into `out_fd` (for a compressed outer archive, e.g.
// `docker save | gzip`), failing past `max_bytes`.
Status DecompressToFd(const FileSection& section, int out_fd, uint64_t max_bytes);

// sha256 of a whole section, read with pread.
Result<std::string> HashSection(const FileSection& section);

}  // namespace sandbox::rootfs
