#include "runtime/agent/init/file_ops.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>

#include "runtime/base/fd.h"
#include "runtime/base/files.h"

namespace sandbox::agent {

namespace {

constexpr size_t kMaxPathBytes = 4096;
constexpr int kMaxListDepth = 32;

// The error code a failed path call maps to in the protocol.
Error PathError(std::string_view call, std::string_view path, int err) {
  Error error = SysError(call, path, err);
  switch (err) {
    case ENOENT:
    case ENOTDIR:
      error.code = ErrorCode::kNotFound;
      break;
    case EEXIST:
      error.code = ErrorCode::kFileExists;
      break;
    case EXDEV:  // openat2 RESOLVE_BENEATH: the path left its root
    case ELOOP:  // a symlink where none may be (O_NOFOLLOW), or too many
    case EACCES:
    case EPERM:
    case EISDIR:
    case ENAMETOOLONG:
    case EROFS:
      error.code = ErrorCode::kInvalidPath;
      break;
    case ENOSPC:
    case EDQUOT:
    case EFBIG:
      error.code = ErrorCode::kUploadTooLarge;
      break;
    default:
      error.code = ErrorCode::kInternal;
  }
  return error;
}

int64_t Millis(const struct timespec& ts) {
  return static_cast<int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

std::vector<std::string> SplitPath(std::string_view rel) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (start < rel.size()) {
    size_t end = rel.find('/', start);
    if (end == std::string_view::npos) end = rel.size();
    if (end > start) parts.emplace_back(rel.substr(start, end - start));
    start = end + 1;
  }
  return parts;
}

// Opens `rel` (relative, normalized) beneath `root_fd`; fails with EXDEV-style kInvalidPath when
// resolution would leave the root. Without openat2 (kernel < 5.6, or a seccomp filter answering
// ENOSYS) it walks the components refusing every symlink, which is stricter but still safe.
Result<Fd> OpenBeneath(int root_fd, const std::string& rel, int flags) {
  struct open_how how {};
  how.flags = static_cast<uint64_t>(flags | O_CLOEXEC);
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS;
  long fd = ::syscall(SYS_openat2, root_fd, rel.c_str(), &how, sizeof how);
  if (fd >= 0) return Fd(static_cast<int>(fd));
  if (errno != ENOSYS) return tl::unexpected(PathError("openat2", rel, errno));

  std::vector<std::string> parts = SplitPath(rel);
  Fd current(::fcntl(root_fd, F_DUPFD_CLOEXEC, 0));
  if (!current) return FailSys("fcntl(F_DUPFD_CLOEXEC)");
  for (size_t i = 0; i < parts.size(); ++i) {
    bool last = i + 1 == parts.size();
    int step_flags = last ? (flags | O_NOFOLLOW) : (O_PATH | O_DIRECTORY | O_NOFOLLOW);
    Fd next(::openat(current.get(), parts[i].c_str(), step_flags | O_CLOEXEC));
    if (!next) return tl::unexpected(PathError("openat", rel, errno));
    current = std::move(next);
  }
  return current;
}

// mkdir -p of `rel` beneath `root_fd`; returns an O_PATH fd of the last directory.
Result<Fd> MakeDirsBeneath(int root_fd, const std::string& rel) {
  std::vector<std::string> parts = SplitPath(rel);
  Fd parent(::fcntl(root_fd, F_DUPFD_CLOEXEC, 0));
  if (!parent) return FailSys("fcntl(F_DUPFD_CLOEXEC)");
  std::string sub;
  for (const auto& part : parts) {
    sub += sub.empty() ? part : "/" + part;
    auto dir = OpenBeneath(root_fd, sub, O_PATH | O_DIRECTORY);
    if (!dir && dir.error().code == ErrorCode::kNotFound) {
      if (::mkdirat(parent.get(), part.c_str(), 0755) != 0 && errno != EEXIST) {
        return tl::unexpected(PathError("mkdir", sub, errno));
      }
      dir = OpenBeneath(root_fd, sub, O_PATH | O_DIRECTORY);
    }
    if (!dir) {
      Error error = std::move(dir.error());
      // A file where a directory is needed, or a dangling link: the path cannot be written.
      if (error.code == ErrorCode::kNotFound) error.code = ErrorCode::kInvalidPath;
      return tl::unexpected(std::move(error));
    }
    parent = std::move(*dir);
  }
  return parent;
}

FileEntry EntryFromStat(std::string path, const struct stat& st) {
  FileEntry entry;
  entry.path = std::move(path);
  entry.is_dir = S_ISDIR(st.st_mode);
  entry.size = entry.is_dir ? 0 : static_cast<uint64_t>(st.st_size);
  entry.mtime_ms = Millis(st.st_mtim);
  return entry;
}

void ListDir(int dir_fd, const std::string& prefix, bool recursive, int depth, size_t max_entries,
             Listing& listing) {
  DIR* dir = ::fdopendir(dir_fd);  // owns dir_fd from here
  if (dir == nullptr) {
    ::close(dir_fd);
    return;
  }
  while (dirent* entry = ::readdir(dir)) {
    const char* name = entry->d_name;
    if (std::strcmp(name, ".") == 0 || std::strcmp(name, "..") == 0) continue;
    if (listing.entries.size() >= max_entries) {
      listing.truncated = true;
      break;
    }
    struct stat st {};
    if (::fstatat(::dirfd(dir), name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    bool is_link = S_ISLNK(st.st_mode);
    // A symlink is shown as what it points to; a dangling one is left out.
    if (is_link && ::fstatat(::dirfd(dir), name, &st, 0) != 0) continue;
    std::string path = prefix + "/" + name;
    listing.entries.push_back(EntryFromStat(path, st));
    if (recursive && !is_link && S_ISDIR(st.st_mode) && depth < kMaxListDepth) {
      int child = ::openat(::dirfd(dir), name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (child >= 0) ListDir(child, path, recursive, depth + 1, max_entries, listing);
    }
  }
  ::closedir(dir);
}

}  // namespace

FileOps::FileOps(std::string data_dir, std::string tmp_dir)
    : data_dir_(std::move(data_dir)), tmp_dir_(std::move(tmp_dir)) {}

Result<std::string> FileOps::Normalize(std::string_view path) const {
  if (path.find('\0') != std::string_view::npos) {
    return Fail(ErrorCode::kInvalidPath, "path contains a NUL byte");
  }
  if (path.size() > kMaxPathBytes) {
    return Fail(ErrorCode::kInvalidPath, "path of {} bytes is too long", path.size());
  }
  std::string joined = (!path.empty() && path.front() == '/') ? std::string(path)
                                                              : data_dir_ + "/" + std::string(path);
  std::vector<std::string> parts;
  for (auto& part : SplitPath(joined)) {
    if (part == ".") continue;
    if (part == "..") {
      if (!parts.empty()) parts.pop_back();  // "/.." is "/", as the kernel has it
      continue;
    }
    parts.push_back(std::move(part));
  }
  std::string normalized;
  for (const auto& part : parts) normalized += "/" + part;
  return normalized.empty() ? std::string("/") : normalized;
}

Status FileOps::Write(std::string_view path, std::string_view content, bool overwrite,
                      uint32_t mode) const {
  SBX_ASSIGN_OR_RETURN(PendingWrite write, BeginWrite(path, overwrite, mode));
  SBX_TRY(write.Append(content));
  return write.Commit();
}

Result<PendingWrite> FileOps::BeginWrite(std::string_view path, bool overwrite,
                                         uint32_t mode) const {
  SBX_ASSIGN_OR_RETURN(std::string absolute, Normalize(path));
  const std::string* root = nullptr;
  for (const std::string* candidate : {&data_dir_, &tmp_dir_}) {
    if (absolute.size() > candidate->size() + 1 && absolute.starts_with(*candidate) &&
        absolute[candidate->size()] == '/') {
      root = candidate;
    }
  }
  if (root == nullptr) {
    return Fail(ErrorCode::kInvalidPath, "{}: files can only be written under {} or {}", absolute,
                data_dir_, tmp_dir_);
  }
  std::string rel = absolute.substr(root->size() + 1);
  size_t slash = rel.rfind('/');
  std::string parent_rel = slash == std::string::npos ? std::string() : rel.substr(0, slash);
  std::string name = slash == std::string::npos ? rel : rel.substr(slash + 1);

  Fd root_fd(::open(root->c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!root_fd) return tl::unexpected(PathError("open", *root, errno));
  SBX_ASSIGN_OR_RETURN(Fd parent, MakeDirsBeneath(root_fd.get(), parent_rel));

  // Overwrite: write a temp file next to it and rename it over the name at the end, so a reader
  // never sees half a file and a symlink of that name is replaced rather than followed. No
  // overwrite: O_EXCL takes the name at once (also refusing an existing symlink without
  // following it), so the client learns of a clash before it sends the content.
  std::string temp = name;
  if (overwrite) {
    static std::atomic<unsigned> counter{0};
    temp = "." + name.substr(0, 200) + ".upload-" + std::to_string(::getpid()) + "-" +
           std::to_string(counter++);
  }
  Fd fd(::openat(parent.get(), temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                 0600));
  if (!fd) return tl::unexpected(PathError("open", absolute, errno));
  return PendingWrite(std::move(parent), std::move(fd), std::move(temp), std::move(name),
                      std::move(absolute), mode);
}

PendingWrite::PendingWrite(Fd parent, Fd file, std::string temp_name, std::string name,
                           std::string absolute, uint32_t mode)
    : parent_(std::move(parent)),
      file_(std::move(file)),
      temp_name_(std::move(temp_name)),
      name_(std::move(name)),
      absolute_(std::move(absolute)),
      mode_(mode) {}

Status PendingWrite::Append(std::string_view data) {
  if (!open_) return Fail(ErrorCode::kInvalidArgument, "{}: the write is over", absolute_);
  if (auto written = WriteAll(file_.get(), data); !written) {
    Error error = PathError("write", absolute_, written.error().sys_errno);
    Abort();
    return tl::unexpected(std::move(error));
  }
  written_ += data.size();
  return {};
}

Status PendingWrite::Commit() {
  if (!open_) return Fail(ErrorCode::kInvalidArgument, "{}: the write is over", absolute_);
  // The mode asked for, not the one the umask left.
  if (::fchmod(file_.get(), static_cast<mode_t>(mode_ & 0777)) != 0) {
    Error error = SysError("fchmod", absolute_);
    Abort();
    return tl::unexpected(std::move(error));
  }
  file_.Reset();
  if (temp_name_ != name_ &&
      ::renameat(parent_.get(), temp_name_.c_str(), parent_.get(), name_.c_str()) != 0) {
    Error error = PathError("rename", absolute_, errno);
    Abort();
    return tl::unexpected(std::move(error));
  }
  open_ = false;
  return {};
}

void PendingWrite::Abort() {
  if (!open_ || !parent_) return;  // done, or moved from
  open_ = false;
  file_.Reset();
  ::unlinkat(parent_.get(), temp_name_.c_str(), 0);
}

Result<std::string> FileOps::Read(std::string_view path, uint64_t max_bytes) const {
  // Piece by piece through ReadChunk, which judges the file (type, size, limit) once per piece.
  constexpr size_t kPiece = 1 << 20;
  std::string content;
  for (;;) {
    SBX_ASSIGN_OR_RETURN(FileChunk chunk, ReadChunk(path, content.size(), kPiece, max_bytes));
    if (content.empty()) content.reserve(static_cast<size_t>(chunk.size));
    content += chunk.content;
    if (chunk.eof) return content;
  }
}

Result<FileChunk> FileOps::ReadChunk(std::string_view path, uint64_t offset, size_t length,
                                     uint64_t max_bytes) const {
  SBX_ASSIGN_OR_RETURN(std::string absolute, Normalize(path));
  // O_NONBLOCK: a FIFO must not hang the agent; it is refused below anyway.
  Fd fd(::open(absolute.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC));
  if (!fd) return tl::unexpected(PathError("open", absolute, errno));
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return FailSys("fstat", absolute);
  if (S_ISDIR(st.st_mode)) return Fail(ErrorCode::kInvalidPath, "{} is a directory", absolute);
  if (!S_ISREG(st.st_mode))
    return Fail(ErrorCode::kInvalidPath, "{} is not a regular file", absolute);
  auto too_large = [&](uint64_t size) {
    return Fail(ErrorCode::kArtifactTooLarge, "{} has {} bytes, more than the limit of {}",
                absolute, size, max_bytes);
  };
  auto size = static_cast<uint64_t>(st.st_size);
  if (size > max_bytes) return too_large(size);
  if (offset > max_bytes) return too_large(offset);
  // One byte beyond the limit is enough to tell a file that grew past it.
  length = static_cast<size_t>(std::min<uint64_t>(length, max_bytes - offset + 1));
  FileChunk chunk;
  chunk.size = size;
  chunk.device = static_cast<uint64_t>(st.st_dev);
  chunk.inode = static_cast<uint64_t>(st.st_ino);
  chunk.content.resize(length);
  size_t got = 0;
  while (got < length) {
    ssize_t n = ::pread(fd.get(), chunk.content.data() + got, length - got,
                        static_cast<off_t>(offset + got));
    if (n < 0) {
      if (errno == EINTR) continue;
      return tl::unexpected(PathError("read", absolute, errno));
    }
    if (n == 0) {
      chunk.eof = true;
      break;
    }
    got += static_cast<size_t>(n);
  }
  chunk.content.resize(got);
  if (offset + got > max_bytes) return too_large(offset + got);
  // A file that reports its size ends there for this reader (one that grows is read as it was);
  // /proc files report 0 and end when a read returns nothing.
  if (size > 0 && offset + got >= size) chunk.eof = true;
  return chunk;
}

Result<FileEntry> FileOps::Stat(std::string_view path) const {
  SBX_ASSIGN_OR_RETURN(std::string absolute, Normalize(path));
  struct stat st {};
  if (::stat(absolute.c_str(), &st) != 0) return tl::unexpected(PathError("stat", absolute, errno));
  return EntryFromStat(absolute, st);
}

Result<Listing> FileOps::List(std::string_view path, bool recursive, size_t max_entries) const {
  SBX_ASSIGN_OR_RETURN(std::string absolute, Normalize(path));
  struct stat st {};
  if (::stat(absolute.c_str(), &st) != 0) return tl::unexpected(PathError("stat", absolute, errno));
  Listing listing;
  if (!S_ISDIR(st.st_mode)) {
    listing.entries.push_back(EntryFromStat(absolute, st));
    return listing;
  }
  int fd = ::open(absolute.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return tl::unexpected(PathError("open", absolute, errno));
  ListDir(fd, absolute == "/" ? std::string() : absolute, recursive, 0, max_entries, listing);
  std::sort(listing.entries.begin(), listing.entries.end(),
            [](const FileEntry& a, const FileEntry& b) { return a.path < b.path; });
  return listing;
}

}  // namespace sandbox::agent
