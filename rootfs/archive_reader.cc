#include "rootfs/archive_reader.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include <spdlog/spdlog.h>

#include "runtime/base/files.h"

namespace sandbox::rootfs {
namespace {

constexpr size_t kBufferBytes = 1 << 20;

struct ArchiveDeleter {
  void operator()(archive* a) const { archive_read_free(a); }
};
using ArchivePtr = std::unique_ptr<archive, ArchiveDeleter>;

std::string ArchiveMessage(archive* a) {
  const char* message = archive_error_string(a);
  return message != nullptr ? message : "unknown libarchive error";
}

// pread(2) of up to `size` bytes, retrying EINTR.
ssize_t PreadSome(int fd, void* buffer, size_t size, uint64_t offset) {
  for (;;) {
    ssize_t n = ::pread(fd, buffer, size, static_cast<off_t>(offset));
    if (n >= 0 || errno != EINTR) return n;
  }
}

// Enables exactly one decompression filter. ARCHIVE_WARN means libarchive will run an
// external program instead of its built-in code; that still works, so it is only logged.
Status EnableFilter(archive* a, Compression compression) {
  int r = ARCHIVE_OK;
  switch (compression) {
    case Compression::kGzip:
      r = archive_read_support_filter_gzip(a);
      break;
    case Compression::kZstd:
      r = archive_read_support_filter_zstd(a);
      break;
    case Compression::kNone:
      r = archive_read_support_filter_none(a);
      break;
  }
  if (r == ARCHIVE_WARN) {
    spdlog::debug("libarchive uses an external program for {}", CompressionName(compression));
  } else if (r != ARCHIVE_OK) {
    return Fail(ErrorCode::kInternal, "libarchive cannot read {}: {}", CompressionName(compression),
                ArchiveMessage(a));
  }
  return {};
}

}  // namespace

std::string_view CompressionName(Compression compression) {
  switch (compression) {
    case Compression::kNone:
      return "tar";
    case Compression::kGzip:
      return "gzip";
    case Compression::kZstd:
      return "zstd";
  }
  return "tar";
}

Compression SniffCompression(std::string_view head) {
  if (head.size() >= 2 && static_cast<unsigned char>(head[0]) == 0x1f &&
      static_cast<unsigned char>(head[1]) == 0x8b) {
    return Compression::kGzip;
  }
  if (head.size() >= 4 && static_cast<unsigned char>(head[0]) == 0x28 &&
      static_cast<unsigned char>(head[1]) == 0xb5 && static_cast<unsigned char>(head[2]) == 0x2f &&
      static_cast<unsigned char>(head[3]) == 0xfd) {
    return Compression::kZstd;
  }
  return Compression::kNone;
}

Result<Compression> SniffCompression(const FileSection& section) {
  char head[4] = {};
  size_t want = static_cast<size_t>(std::min<uint64_t>(sizeof head, section.size));
  ssize_t n = PreadSome(section.fd, head, want, section.offset);
  if (n < 0) return FailSys("pread");
  return SniffCompression(std::string_view(head, static_cast<size_t>(n)));
}

// ---- LayerReader -------------------------------------------------------------------------

namespace {
constexpr size_t kQueuedChunks = 4;  // how far (in kBufferBytes) the reading thread runs ahead
}  // namespace

Result<std::unique_ptr<LayerReader>> LayerReader::Open(const FileSection& section,
                                                       uint64_t max_uncompressed_bytes) {
  std::unique_ptr<LayerReader> reader(new LayerReader());
  reader->section_ = section;
  reader->max_uncompressed_ = max_uncompressed_bytes;
  SBX_ASSIGN_OR_RETURN(reader->compression_, SniffCompression(section));
  if (reader->compression_ == Compression::kNone && section.size > max_uncompressed_bytes) {
    return Fail(ErrorCode::kInvalidArgument, "layer of {} bytes exceeds the cap of {} bytes",
                section.size, max_uncompressed_bytes);
  }
  if (reader->compression_ != Compression::kNone) SBX_TRY(reader->OpenDecompressor());
  for (size_t i = 0; i < kQueuedChunks; ++i) reader->spare_.emplace_back(kBufferBytes);
  reader->producer_ = std::thread([r = reader.get()] { r->Produce(); });
  SBX_TRY(reader->OpenTar());
  return reader;
}

LayerReader::~LayerReader() {
  if (producer_.joinable()) {
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
    }
    changed_.notify_all();
    producer_.join();
  }
}

Status LayerReader::OpenDecompressor() {
  // The "raw" format is a pass-through with no parser: it only lets the filter run.
  stored_buffer_.resize(kBufferBytes);
  decompressor_.reset(archive_read_new());
  if (!decompressor_) return Fail(ErrorCode::kInternal, "archive_read_new failed");
  SBX_TRY(EnableFilter(decompressor_.get(), compression_));
  archive_read_support_format_raw(decompressor_.get());
  archive_entry* entry = nullptr;
  if (archive_read_open(decompressor_.get(), this, nullptr, &LayerReader::ReadStored, nullptr) !=
          ARCHIVE_OK ||
      archive_read_next_header(decompressor_.get(), &entry) != ARCHIVE_OK) {
    return Fail(ErrorCode::kInvalidArgument, "open compressed layer: {}",
                ArchiveMessage(decompressor_.get()));
  }
  return {};
}

Status LayerReader::OpenTar() {
  tar_.reset(archive_read_new());
  if (!tar_) return Fail(ErrorCode::kInternal, "archive_read_new failed");
  archive_read_support_format_tar(tar_.get());
  archive_read_support_filter_none(tar_.get());
  if (archive_read_open(tar_.get(), this, nullptr, &LayerReader::ReadChunk, nullptr) !=
      ARCHIVE_OK) {
    return Fail(TarError("open layer tar"));
  }
  return {};
}

void LayerReader::Produce() {
  std::optional<Error> error;
  for (;;) {
    Chunk chunk;
    {
      std::unique_lock lock(mutex_);
      changed_.wait(lock, [this] { return stop_ || !spare_.empty(); });
      if (stop_) return;
      chunk = std::move(spare_.back());
      spare_.pop_back();
    }
    auto produced = ProduceChunk(chunk);
    if (!produced) {
      error = std::move(produced.error());
      break;
    }
    if (*produced == 0) break;
    chunk.resize(*produced);
    {
      std::lock_guard lock(mutex_);
      ready_.push_back(std::move(chunk));
      stored_progress_ = stored_read_;
    }
    changed_.notify_all();
  }
  if (!error && compression_ != Compression::kNone) {
    // Whatever follows the compressed stream is part of the blob, so of its digest.
    for (;;) {
      la_ssize_t n = ReadStoredInto(stored_buffer_.data(), stored_buffer_.size());
      if (n < 0) {
        error = *stored_error_;
        break;
      }
      if (n == 0) break;
    }
  }
  LayerDigests digests;
  if (!error) {
    digests.blob_hex = stored_hash_.FinishHex();
    digests.diff_id_hex =
        compression_ == Compression::kNone ? digests.blob_hex : uncompressed_hash_.FinishHex();
    digests.compressed_bytes = stored_read_;
    digests.uncompressed_bytes = uncompressed_read_;
  }
  {
    std::lock_guard lock(mutex_);
    producer_error_ = std::move(error);
    digests_ = std::move(digests);
    stored_progress_ = stored_read_;
    produced_all_ = true;
  }
  changed_.notify_all();
}

Result<size_t> LayerReader::ProduceChunk(Chunk& chunk) {
  chunk.resize(kBufferBytes);
  if (compression_ == Compression::kNone) {
    la_ssize_t n = ReadStoredInto(chunk.data(), chunk.size());
    if (n < 0) return Fail(*stored_error_);
    uncompressed_read_ += static_cast<uint64_t>(n);
    return static_cast<size_t>(n);
  }
  la_ssize_t n = archive_read_data(decompressor_.get(), chunk.data(), chunk.size());
  if (n < 0) {
    return Fail(ErrorCode::kInvalidArgument, "decompress layer: {}",
                ArchiveMessage(decompressor_.get()));
  }
  auto got = static_cast<uint64_t>(n);
  if (uncompressed_read_ + got > max_uncompressed_) {
    return Fail(ErrorCode::kInvalidArgument,
                "layer expands beyond the cap of {} bytes (compression bomb?)", max_uncompressed_);
  }
  uncompressed_read_ += got;
  uncompressed_hash_.Update(chunk.data(), static_cast<size_t>(got));
  return static_cast<size_t>(got);
}

la_ssize_t LayerReader::ReadStored(archive* a, void* self, const void** buffer) {
  auto* reader = static_cast<LayerReader*>(self);
  la_ssize_t n =
      reader->ReadStoredInto(reader->stored_buffer_.data(), reader->stored_buffer_.size());
  if (n < 0) archive_set_error(a, EIO, "%s", reader->stored_error_->message.c_str());
  *buffer = reader->stored_buffer_.data();
  return n;
}

la_ssize_t LayerReader::ReadStoredInto(char* buffer, size_t size) {
  uint64_t remaining = section_.size - stored_read_;
  if (remaining == 0) return 0;
  size_t want = static_cast<size_t>(std::min<uint64_t>(size, remaining));
  ssize_t n = PreadSome(section_.fd, buffer, want, section_.offset + stored_read_);
  if (n < 0) {
    stored_error_ = SysError("pread", "layer");
    return -1;
  }
  if (n == 0) {  // the file got shorter than its size said
    stored_error_ = MakeError(ErrorCode::kInvalidArgument, "layer truncated: {} of {} bytes",
                              stored_read_, section_.size);
    return -1;
  }
  auto got = static_cast<size_t>(n);
  stored_hash_.Update(buffer, got);
  stored_read_ += got;
  return static_cast<la_ssize_t>(got);
}

la_ssize_t LayerReader::ReadChunk(archive*, void* self, const void** buffer) {
  return static_cast<LayerReader*>(self)->NextChunk(buffer);
}

la_ssize_t LayerReader::NextChunk(const void** buffer) {
  uint64_t progress = 0;
  {
    std::unique_lock lock(mutex_);
    // The chunk libarchive had is done with: the reading thread may refill it.
    if (!current_.empty()) {
      spare_.push_back(std::move(current_));
      current_ = Chunk();
      changed_.notify_all();
    }
    changed_.wait(lock, [this] { return !ready_.empty() || produced_all_; });
    if (ready_.empty()) {
      if (producer_error_) {
        callback_error_ = producer_error_;
        return -1;
      }
      return 0;
    }
    current_ = std::move(ready_.front());
    ready_.pop_front();
    progress = stored_progress_;
  }
  if (progress_) progress_(progress);
  *buffer = current_.data();
  return static_cast<la_ssize_t>(current_.size());
}

Error LayerReader::TarError(std::string_view what) {
  if (callback_error_) return Error(*callback_error_).Context(what);
  return MakeError(ErrorCode::kInvalidArgument, "{}: {}", what, ArchiveMessage(tar_.get()));
}

Result<archive_entry*> LayerReader::NextEntry() {
  archive_entry* entry = nullptr;
  int r = archive_read_next_header(tar_.get(), &entry);
  if (r == ARCHIVE_EOF) return nullptr;
  if (r == ARCHIVE_WARN) {
    // E.g. a UTF-8 name that cannot be converted to the C locale: the raw bytes are kept.
    spdlog::debug("layer entry: {}", ArchiveMessage(tar_.get()));
    return entry;
  }
  if (r != ARCHIVE_OK) return Fail(TarError("read layer entry"));
  return entry;
}

Result<LayerReader::Block> LayerReader::NextDataBlock() {
  Block block;
  la_int64_t offset = 0;
  int r = archive_read_data_block(tar_.get(), &block.data, &block.size, &offset);
  if (r == ARCHIVE_EOF) return Block{};
  if (r != ARCHIVE_OK && r != ARCHIVE_WARN) return Fail(TarError("read layer data"));
  block.offset = offset;
  return block;
}

Result<LayerDigests> LayerReader::Finish() {
  // What follows the end-of-archive blocks is part of the uncompressed stream and so of the
  // diff_id: take every remaining chunk.
  const void* ignored = nullptr;
  for (;;) {
    la_ssize_t n = NextChunk(&ignored);
    if (n < 0) return Fail(TarError("read layer"));
    if (n == 0) break;
  }
  producer_.join();
  std::lock_guard lock(mutex_);
  if (producer_error_) return Fail(Error(*producer_error_).Context("read layer"));
  return digests_;
}

// ---- outer archives ----------------------------------------------------------------------

Result<std::vector<TarMember>> ListTarMembers(int fd, uint64_t max_members) {
  if (::lseek(fd, 0, SEEK_SET) != 0) return FailSys("lseek");
  ArchivePtr a(archive_read_new());
  if (!a) return Fail(ErrorCode::kInternal, "archive_read_new failed");
  archive_read_support_format_tar(a.get());
  archive_read_support_filter_none(a.get());
  // archive_read_open_fd seeks over member data on regular files, so listing a large
  // archive reads only its headers.
  if (archive_read_open_fd(a.get(), fd, 64 * 1024) != ARCHIVE_OK) {
    return Fail(ErrorCode::kInvalidArgument, "not a tar archive: {}", ArchiveMessage(a.get()));
  }
  std::vector<TarMember> members;
  for (;;) {
    archive_entry* entry = nullptr;
    int r = archive_read_next_header(a.get(), &entry);
    if (r == ARCHIVE_EOF) break;
    if (r != ARCHIVE_OK && r != ARCHIVE_WARN) {
      return Fail(ErrorCode::kInvalidArgument, "not a valid tar archive: {}",
                  ArchiveMessage(a.get()));
    }
    if (members.size() >= max_members) {
      return Fail(ErrorCode::kInvalidArgument, "archive has more than {} members", max_members);
    }
    const char* name = archive_entry_pathname(entry);
    if (name == nullptr) continue;
    TarMember member;
    member.name = name;
    // After the header is read, the filter position is the first byte of the member's data.
    member.data_offset = static_cast<uint64_t>(archive_filter_bytes(a.get(), 0));
    member.size = static_cast<uint64_t>(std::max<la_int64_t>(0, archive_entry_size(entry)));
    member.sparse = archive_entry_sparse_count(entry) > 0;
    if (const char* hardlink = archive_entry_hardlink(entry)) {
      member.type = TarMember::Type::kHardlink;
      member.link_target = hardlink;
    } else {
      switch (archive_entry_filetype(entry)) {
        case AE_IFREG:
          member.type = TarMember::Type::kFile;
          break;
        case AE_IFDIR:
          member.type = TarMember::Type::kDirectory;
          break;
        case AE_IFLNK:
          member.type = TarMember::Type::kSymlink;
          if (const char* target = archive_entry_symlink(entry)) member.link_target = target;
          break;
        default:
          member.type = TarMember::Type::kOther;
          break;
      }
    }
    members.push_back(std::move(member));
  }
  return members;
}

Status DecompressToFd(const FileSection& section, int out_fd, uint64_t max_bytes) {
  SBX_ASSIGN_OR_RETURN(Compression compression, SniffCompression(section));
  struct Source {
    FileSection section;
    uint64_t done = 0;
    std::vector<char> buffer = std::vector<char>(kBufferBytes);
  } source{section};
  auto read = [](archive* a, void* client, const void** buffer) -> la_ssize_t {
    auto* src = static_cast<Source*>(client);
    uint64_t remaining = src->section.size - src->done;
    size_t want = static_cast<size_t>(std::min<uint64_t>(src->buffer.size(), remaining));
    if (want == 0) return 0;
    ssize_t n =
        PreadSome(src->section.fd, src->buffer.data(), want, src->section.offset + src->done);
    if (n < 0) {
      archive_set_error(a, errno, "pread failed");
      return -1;
    }
    src->done += static_cast<uint64_t>(n);
    *buffer = src->buffer.data();
    return n;
  };
  ArchivePtr a(archive_read_new());
  if (!a) return Fail(ErrorCode::kInternal, "archive_read_new failed");
  SBX_TRY(EnableFilter(a.get(), compression));
  archive_read_support_format_raw(a.get());
  archive_entry* entry = nullptr;
  if (archive_read_open(a.get(), &source, nullptr, read, nullptr) != ARCHIVE_OK ||
      archive_read_next_header(a.get(), &entry) != ARCHIVE_OK) {
    return Fail(ErrorCode::kInvalidArgument, "decompress: {}", ArchiveMessage(a.get()));
  }
  std::vector<char> out(kBufferBytes);
  uint64_t written = 0;
  for (;;) {
    la_ssize_t n = archive_read_data(a.get(), out.data(), out.size());
    if (n < 0) return Fail(ErrorCode::kInvalidArgument, "decompress: {}", ArchiveMessage(a.get()));
    if (n == 0) break;
    written += static_cast<uint64_t>(n);
    if (written > max_bytes) {
      return Fail(ErrorCode::kInvalidArgument, "archive expands beyond the cap of {} bytes",
                  max_bytes);
    }
    SBX_TRY(WriteAll(out_fd, std::string_view(out.data(), static_cast<size_t>(n))));
  }
  return {};
}

Result<std::string> HashSection(const FileSection& section) {
  Sha256 hash;
  std::vector<char> buffer(kBufferBytes);
  uint64_t done = 0;
  while (done < section.size) {
    size_t want = static_cast<size_t>(std::min<uint64_t>(buffer.size(), section.size - done));
    ssize_t n = PreadSome(section.fd, buffer.data(), want, section.offset + done);
    if (n < 0) return FailSys("pread");
    if (n == 0) {
      return Fail(ErrorCode::kInvalidArgument, "file truncated: {} of {} bytes", done,
                  section.size);
    }
    hash.Update(buffer.data(), static_cast<size_t>(n));
    done += static_cast<uint64_t>(n);
  }
  return hash.FinishHex();
}

}  // namespace sandbox::rootfs
