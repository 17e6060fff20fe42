#include "rootfs/safe_extract.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <optional>

#include <spdlog/spdlog.h>

#include "rootfs/in_root.h"
#include "rootfs/whiteout.h"
#include "runtime/base/files.h"

namespace sandbox::rootfs {
namespace {

timespec EntryMtime(archive_entry* entry) {
  timespec ts{};
  ts.tv_sec = archive_entry_mtime(entry);
  ts.tv_nsec = archive_entry_mtime_nsec(entry);
  if (ts.tv_nsec < 0 || ts.tv_nsec >= 1'000'000'000) ts.tv_nsec = 0;
  return ts;
}

// The bits the kernel will strip from the mode of a file created below `root_fd`: the umask,
// read from /proc (umask(2) cannot read it without setting it, racing other threads). nullopt
// when unknown or when the root has a default ACL, which replaces the umask (acl(5)).
std::optional<mode_t> CreationMask(int root_fd) {
  if (::fgetxattr(root_fd, "system.posix_acl_default", nullptr, 0) >= 0 || errno != ENODATA) {
    return std::nullopt;
  }
  auto status = ReadFile("/proc/self/status");
  if (!status) return std::nullopt;
  size_t at = status->find("\nUmask:");
  if (at == std::string::npos) return std::nullopt;
  return static_cast<mode_t>(std::strtoul(status->c_str() + at + 7, nullptr, 8) & 0777);
}

Error EntryError(Error error, const std::string& path) {
  return std::move(error).Context(fmt::format("entry '{}'", path.substr(0, 200)));
}

}  // namespace

Result<std::unique_ptr<LayerApplier>> LayerApplier::Create(const std::string& root_dir,
                                                           const ExtractLimits& limits) {
  std::unique_ptr<LayerApplier> applier(new LayerApplier());
  applier->root_.Reset(::open(root_dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!applier->root_) return FailSys("open", root_dir);
  SBX_ASSIGN_OR_RETURN(applier->root_path_, FdPath(applier->root_.get()));
  applier->limits_ = limits;
  Fd root_dir_fd(::open(root_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (root_dir_fd) applier->creation_mask_ = CreationMask(root_dir_fd.get());
  return applier;
}

Status LayerApplier::ApplyLayer(LayerReader& layer) {
  layer_entries_.clear();
  parents_.clear();
  for (;;) {
    SBX_ASSIGN_OR_RETURN(archive_entry * entry, layer.NextEntry());
    if (entry == nullptr) break;
    SBX_TRY(ApplyEntry(layer, entry));
  }
  parents_.clear();
  return {};
}

Status LayerApplier::ApplyEntry(LayerReader& layer, archive_entry* entry) {
  if (++stats_.entries > limits_.max_entries) {
    return Fail(ErrorCode::kInvalidArgument, "image has more than {} entries", limits_.max_entries);
  }
  const char* raw_name = archive_entry_pathname(entry);
  if (raw_name == nullptr) return Fail(ErrorCode::kInvalidPath, "entry without a name");
  auto normalized = NormalizeEntryPath(raw_name, limits_.max_path_bytes);
  if (!normalized) return Fail(std::move(normalized.error()));
  const EntryPath& path = *normalized;
  const std::string joined = path.Joined();

  auto whiteout = ClassifyWhiteout(path);
  if (!whiteout) return Fail(std::move(whiteout.error()));
  switch (whiteout->kind) {
    case WhiteoutKind::kAufsMeta:
      return {};
    case WhiteoutKind::kOpaque:
      return ApplyOpaque(path);
    case WhiteoutKind::kRemove:
      return ApplyWhiteout(path, whiteout->target);
    case WhiteoutKind::kNone:
      break;
  }

  const char* hardlink = archive_entry_hardlink(entry);
  const auto type = archive_entry_filetype(entry);
  if (path.IsRoot()) {
    // "./" describes the root itself: only its attributes can change.
    if (hardlink != nullptr || type != AE_IFDIR) {
      return Fail(ErrorCode::kInvalidPath, "the root entry '{}' is not a directory", raw_name);
    }
    DirAttrs& attrs = dir_attrs_[""];
    attrs.mode = SanitizedMode(entry);
    attrs.has_mtime = true;
    attrs.mtime = EntryMtime(entry);
    return {};
  }

  auto parent_or = OpenParent(path, /*create=*/true);
  if (!parent_or) return Fail(EntryError(std::move(parent_or.error()), joined));
  const Parent& parent = **parent_or;
  const std::string& name = path.Base();
  Status status;
  if (hardlink != nullptr) {
    status = CreateHardlink(parent, name, hardlink);
  } else if (type == AE_IFDIR) {
    status = CreateDirectory(parent, name, entry);
  } else if (type == AE_IFREG) {
    status = CreateFile(layer, parent, name, entry);
  } else if (type == AE_IFLNK) {
    status = CreateSymlink(parent, name, entry);
  } else {
    // Devices, fifos, sockets: never materialized (the sandbox gets a synthesized /dev), but
    // like any entry they replace what the lower layers had there.
    ++stats_.skipped_special;
    spdlog::debug("skipping special file '{}' (type {:o})", joined, type);
    auto removed = RemoveExisting(parent, name, false);
    if (!removed) return Fail(EntryError(std::move(removed.error()), joined));
    return {};
  }
  if (!status) return Fail(EntryError(std::move(status.error()), joined));
  layer_entries_.insert(Key(parent.canonical, name));
  return {};
}

std::string LayerApplier::Canonical(int dir_fd, const std::string& fallback) const {
  auto path = FdPath(dir_fd);
  if (!path) return fallback;
  if (*path == root_path_) return "";
  if (path->size() > root_path_.size() && path->compare(0, root_path_.size(), root_path_) == 0 &&
      (*path)[root_path_.size()] == '/') {
    return path->substr(root_path_.size() + 1);
  }
  return fallback;
}

Result<const LayerApplier::Parent*> LayerApplier::OpenParent(const EntryPath& path, bool create) {
  std::string parent_path = path.ParentJoined();
  for (auto it = parents_.rbegin(); it != parents_.rend(); ++it) {
    if ((*it)->path == parent_path) return it->get();
  }
  auto fd = OpenInRoot(root_.get(), parent_path, O_PATH | O_DIRECTORY);
  if (!fd && fd.error().sys_errno == ENOENT) {
    if (!create) return nullptr;
    SBX_TRY(CreateMissingParents(path));
    fd = OpenInRoot(root_.get(), parent_path, O_PATH | O_DIRECTORY);
  }
  if (!fd) {
    if (fd.error().sys_errno == ENOTDIR) {
      return Fail(ErrorCode::kInvalidPath, "a parent of it is not a directory");
    }
    return Fail(std::move(fd.error()));
  }
  auto parent = std::make_unique<Parent>();
  parent->path = parent_path;
  parent->canonical = Canonical(fd->get(), parent_path);
  parent->fd = std::move(*fd);
  if (parents_.size() == kCachedParents) parents_.erase(parents_.begin());
  parents_.push_back(std::move(parent));
  return parents_.back().get();
}

Status LayerApplier::CreateMissingParents(const EntryPath& path) {
  // Walks the parents one component at a time, as RESOLVE_IN_ROOT would, creating what is
  // missing. A symlink on the way is followed inside the root ("lib64 -> usr/lib64" before
  // usr/lib64 exists, or "a -> /x/y"), so its target directories are created in the image, as
  // docker and containerd do. Every directory is opened with RESOLVE_IN_ROOT from a path free
  // of symlinks, so nothing here can reach outside the root either.
  std::vector<std::string> pending(path.parts.rbegin() + 1, path.parts.rend());  // a stack
  std::vector<std::string> resolved;
  int hops = 0;
  while (!pending.empty()) {
    std::string part = std::move(pending.back());
    pending.pop_back();
    if (part == ".") continue;
    if (part == "..") {
      if (!resolved.empty()) resolved.pop_back();
      continue;
    }
    std::string dir_path = EntryPath{resolved}.Joined();
    SBX_ASSIGN_OR_RETURN(Fd dir, OpenInRoot(root_.get(), dir_path, O_PATH | O_DIRECTORY));
    std::string child = Key(dir_path, part);
    struct stat st {};
    if (::fstatat(dir.get(), part.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
      if (errno != ENOENT) return FailSys("fstatat", child);
      if (::mkdirat(dir.get(), part.c_str(), 0755) != 0) return FailSys("mkdirat", child);
      dir_attrs_.try_emplace(child);  // 0755, whatever the umask
    } else if (S_ISLNK(st.st_mode)) {
      if (++hops > 40) return Fail(ErrorCode::kInvalidPath, "too many levels of symlinks");
      char target[PATH_MAX];
      ssize_t n = ::readlinkat(dir.get(), part.c_str(), target, sizeof target);
      if (n < 0) return FailSys("readlinkat", child);
      std::string_view link(target, static_cast<size_t>(n));
      if (!link.empty() && link.front() == '/') resolved.clear();
      std::vector<std::string> parts;
      for (size_t pos = 0; pos <= link.size();) {
        size_t slash = std::min(link.find('/', pos), link.size());
        if (slash > pos) parts.emplace_back(link.substr(pos, slash - pos));
        pos = slash + 1;
      }
      pending.insert(pending.end(), parts.rbegin(), parts.rend());
      continue;
    } else if (!S_ISDIR(st.st_mode)) {
      return Fail(ErrorCode::kInvalidPath, "parent '{}' is not a directory", child);
    }
    resolved.push_back(std::move(part));
  }
  return {};
}

Result<bool> LayerApplier::RemoveExisting(const Parent& parent, const std::string& name,
                                          bool keep_dir) {
  struct stat st {};
  if (::fstatat(parent.fd.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
    if (errno == ENOENT) return false;
    return FailSys("fstatat", name);
  }
  if (keep_dir && S_ISDIR(st.st_mode)) return true;
  // The parent fd stays valid: only its child goes. Cached paths through the child do not.
  std::unique_ptr<Parent> keep_alive;
  for (auto& cached : parents_) {
    if (cached.get() == &parent) keep_alive = std::move(cached);
  }
  parents_.clear();
  uint64_t freed = 0;
  auto status = RemoveTreeAt(parent.fd.get(), name, &freed);
  stats_.tree_bytes -= std::min(stats_.tree_bytes, freed);
  SBX_TRY(status);
  if (keep_alive) parents_.push_back(std::move(keep_alive));
  return false;
}

Status LayerApplier::ApplyWhiteout(const EntryPath& path, const std::string& target) {
  ++stats_.whiteouts;
  SBX_ASSIGN_OR_RETURN(const Parent* parent, OpenParent(path, /*create=*/false));
  if (parent == nullptr) return {};  // nothing below to delete
  if (layer_entries_.count(Key(parent->canonical, target)) > 0) return {};  // same layer: spared
  auto removed = RemoveExisting(*parent, target, false);
  if (!removed) return Fail(EntryError(std::move(removed.error()), path.Joined()));
  return {};
}

Status LayerApplier::ApplyOpaque(const EntryPath& path) {
  ++stats_.whiteouts;
  auto keep = [this](const std::string& entry_path) {
    return layer_entries_.count(entry_path) > 0;
  };
  parents_.clear();
  if (path.parts.size() == 1) {
    SBX_ASSIGN_OR_RETURN(Fd root, OpenInRoot(root_.get(), "", O_RDONLY | O_DIRECTORY));
    uint64_t freed = 0;
    auto status = ClearLowerEntries(root.get(), "", keep, &freed);
    stats_.tree_bytes -= std::min(stats_.tree_bytes, freed);
    return status;
  }
  // The opaque directory is the marker's parent.
  EntryPath dir_path{{path.parts.begin(), path.parts.end() - 1}};
  SBX_ASSIGN_OR_RETURN(const Parent* parent, OpenParent(dir_path, /*create=*/false));
  if (parent == nullptr) return {};
  Fd dir(::openat(parent->fd.get(), dir_path.Base().c_str(),
                  O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  // Missing, or not a directory below: nothing lower to hide under it.
  if (!dir) return {};
  std::string canonical = Key(parent->canonical, dir_path.Base());
  parents_.clear();
  uint64_t freed = 0;
  auto status = ClearLowerEntries(dir.get(), canonical, keep, &freed);
  stats_.tree_bytes -= std::min(stats_.tree_bytes, freed);
  if (!status) return Fail(EntryError(std::move(status.error()), path.Joined()));
  return {};
}

mode_t LayerApplier::SanitizedMode(archive_entry* entry) {
  auto mode = static_cast<mode_t>(archive_entry_perm(entry) & 07777);
  if ((mode & (S_ISUID | S_ISGID)) != 0) {
    ++stats_.stripped_setid;
    mode &= static_cast<mode_t>(~(S_ISUID | S_ISGID));
  }
  return mode;
}

void LayerApplier::ApplyXattrs(int fd, archive_entry* entry, const std::string& path) {
  if (archive_entry_xattr_reset(entry) == 0) return;
  const char* name = nullptr;
  const void* value = nullptr;
  size_t size = 0;
  while (archive_entry_xattr_next(entry, &name, &value, &size) == ARCHIVE_OK) {
    // Only user.*: security.capability would grant file capabilities, trusted.overlay.* could
    // forge overlayfs whiteouts and redirects, security.selinux labels are the host's business.
    if (name == nullptr || std::strncmp(name, "user.", 5) != 0) {
      ++stats_.dropped_xattrs;
      continue;
    }
    if (::fsetxattr(fd, name, value, size, 0) != 0) {
      // ENOTSUP (the store's filesystem has no user xattrs) and friends: not worth failing.
      spdlog::debug("xattr {} on '{}' not applied: {}", name, path, ErrnoName(errno));
    }
  }
}

Status LayerApplier::CreateDirectory(const Parent& parent, const std::string& name,
                                     archive_entry* entry) {
  // Owner rwx while unpacking; the archive's mode is applied by Finish(). Whatever is in the
  // way is looked at only when mkdirat says something is (most entries are new).
  if (::mkdirat(parent.fd.get(), name.c_str(), 0700) != 0) {
    if (errno != EEXIST) return FailSys("mkdirat", name);
    SBX_ASSIGN_OR_RETURN(bool exists, RemoveExisting(parent, name, /*keep_dir=*/true));
    if (!exists && ::mkdirat(parent.fd.get(), name.c_str(), 0700) != 0) {
      return FailSys("mkdirat", name);
    }
  }
  ++stats_.directories;
  if (archive_entry_xattr_count(entry) > 0) {
    Fd dir(
        ::openat(parent.fd.get(), name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!dir) return FailSys("openat", name);
    ApplyXattrs(dir.get(), entry, name);
  }
  DirAttrs& attrs = dir_attrs_[Key(parent.canonical, name)];
  attrs.mode = SanitizedMode(entry);
  attrs.has_mtime = true;
  attrs.mtime = EntryMtime(entry);
  return {};
}

Status LayerApplier::CreateFile(LayerReader& layer, const Parent& parent, const std::string& name,
                                archive_entry* entry) {
  la_int64_t declared = archive_entry_size(entry);
  if (declared < 0 || static_cast<uint64_t>(declared) > limits_.max_file_bytes) {
    return Fail(ErrorCode::kInvalidArgument, "file of {} bytes exceeds the cap of {} bytes",
                declared, limits_.max_file_bytes);
  }
  auto size = static_cast<uint64_t>(declared);
  // O_EXCL|O_NOFOLLOW never opens what is there, a symlink included; an existing entry is
  // removed and the file created again.
  constexpr int kCreate = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC;
  // The final mode is given at creation when the umask keeps all of it, saving an fchmod.
  // Not with xattrs: setting user.* ones needs write permission on the file (xattr(7)).
  const mode_t mode = SanitizedMode(entry);
  const bool mode_at_open =
      creation_mask_ && (mode & *creation_mask_) == 0 && archive_entry_xattr_count(entry) == 0;
  const mode_t open_mode = mode_at_open ? mode : 0600;
  Fd fd(::openat(parent.fd.get(), name.c_str(), kCreate, open_mode));
  if (!fd && errno == EEXIST) {
    SBX_TRY(RemoveExisting(parent, name, false));
    fd.Reset(::openat(parent.fd.get(), name.c_str(), kCreate, open_mode));
  }
  if (!fd) return FailSys("openat", name);
  uint64_t position = 0;
  for (;;) {
    SBX_ASSIGN_OR_RETURN(LayerReader::Block block, layer.NextDataBlock());
    if (block.size == 0) break;
    if (block.offset < 0 || static_cast<uint64_t>(block.offset) + block.size > size) {
      return Fail(ErrorCode::kInvalidArgument, "data beyond the declared size of {} bytes", size);
    }
    auto offset = static_cast<uint64_t>(block.offset);
    std::string_view data(static_cast<const char*>(block.data), block.size);
    if (offset != position && ::lseek(fd.get(), static_cast<off_t>(offset), SEEK_SET) < 0) {
      return FailSys("lseek", name);
    }
    SBX_TRY(WriteAll(fd.get(), data));
    position = offset + block.size;
    stats_.file_bytes += block.size;
  }
  // A sparse file may end in a hole.
  if (position < size && ::ftruncate(fd.get(), static_cast<off_t>(size)) != 0) {
    return FailSys("ftruncate", name);
  }
  if (!mode_at_open && ::fchmod(fd.get(), mode) != 0) return FailSys("fchmod", name);
  ApplyXattrs(fd.get(), entry, name);
  timespec times[2] = {EntryMtime(entry), EntryMtime(entry)};
  if (::futimens(fd.get(), times) != 0) return FailSys("futimens", name);
  ++stats_.files;
  stats_.tree_bytes += size;
  return {};
}

Status LayerApplier::CreateSymlink(const Parent& parent, const std::string& name,
                                   archive_entry* entry) {
  const char* target = archive_entry_symlink(entry);
  if (target == nullptr || *target == '\0') {
    return Fail(ErrorCode::kInvalidPath, "symlink without a target");
  }
  if (std::strlen(target) > limits_.max_path_bytes) {
    return Fail(ErrorCode::kInvalidPath, "symlink target longer than {} bytes",
                limits_.max_path_bytes);
  }
  // The target is stored as is: it is only ever resolved inside the root (here with
  // RESOLVE_IN_ROOT, in the sandbox after pivot_root). An existing entry is replaced.
  int made = ::symlinkat(target, parent.fd.get(), name.c_str());
  if (made != 0 && errno == EEXIST) {
    SBX_TRY(RemoveExisting(parent, name, false));
    made = ::symlinkat(target, parent.fd.get(), name.c_str());
  }
  if (made != 0) return FailSys("symlinkat", name);
  timespec times[2] = {EntryMtime(entry), EntryMtime(entry)};
  if (::utimensat(parent.fd.get(), name.c_str(), times, AT_SYMLINK_NOFOLLOW) != 0) {
    return FailSys("utimensat", name);
  }
  ++stats_.symlinks;
  return {};
}

Status LayerApplier::CreateHardlink(const Parent& parent, const std::string& name,
                                    const char* raw_target) {
  SBX_ASSIGN_OR_RETURN(EntryPath target, NormalizeEntryPath(raw_target, limits_.max_path_bytes));
  // The target is resolved in the root like any path, its last component not followed: a
  // link to "a/passwd" with "a -> /etc" is a link to the image's own etc/passwd.
  Fd target_fd;
  if (!target.IsRoot()) {
    auto opened = OpenInRoot(root_.get(), target.Joined(), O_PATH | O_NOFOLLOW);
    if (opened) target_fd = std::move(*opened);
  }
  struct stat target_st {};
  if (!target_fd || ::fstat(target_fd.get(), &target_st) != 0 || !S_ISREG(target_st.st_mode)) {
    // Links to nothing (a skipped device, an entry that never came), to symlinks or to
    // directories: neutralized, as extracting links to outside the layer "may fail".
    ++stats_.skipped_links;
    spdlog::warn("skipping hardlink to '{}': not a regular file in the image", raw_target);
    return {};
  }
  struct stat existing {};
  if (::fstatat(parent.fd.get(), name.c_str(), &existing, AT_SYMLINK_NOFOLLOW) == 0 &&
      existing.st_ino == target_st.st_ino && existing.st_dev == target_st.st_dev) {
    ++stats_.hardlinks;  // already that file
    return {};
  }
  SBX_TRY(RemoveExisting(parent, name, false));
  if (::linkat(target_fd.get(), "", parent.fd.get(), name.c_str(), AT_EMPTY_PATH) != 0) {
    // AT_EMPTY_PATH needs CAP_DAC_READ_SEARCH; without it, link through the fd's magic link
    // (linkat(2)), which names the same already-resolved file.
    std::string via = "/proc/self/fd/" + std::to_string(target_fd.get());
    if (::linkat(AT_FDCWD, via.c_str(), parent.fd.get(), name.c_str(), AT_SYMLINK_FOLLOW) != 0) {
      return FailSys("linkat", name);
    }
  }
  ++stats_.hardlinks;
  return {};
}

Status LayerApplier::EnsureDirectory(const std::string& path) {
  SBX_ASSIGN_OR_RETURN(EntryPath entry_path, NormalizeEntryPath(path, limits_.max_path_bytes));
  parents_.clear();
  Fd current;
  std::string canonical;
  for (const auto& part : entry_path.parts) {
    int dir_fd = current ? current.get() : root_.get();
    struct stat st {};
    bool is_dir =
        ::fstatat(dir_fd, part.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode);
    std::string child = Key(canonical, part);
    if (!is_dir) {
      // Missing, or a file or symlink ("tmp -> var/tmp"): a mount point must be a real
      // directory, or the mount would land wherever the symlink points.
      uint64_t freed = 0;
      SBX_TRY(RemoveTreeAt(dir_fd, part, &freed));
      stats_.tree_bytes -= std::min(stats_.tree_bytes, freed);
      if (::mkdirat(dir_fd, part.c_str(), 0755) != 0) return FailSys("mkdirat", child);
      dir_attrs_[child] = DirAttrs{};
    }
    Fd next(::openat(dir_fd, part.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!next) return FailSys("openat", child);
    current = std::move(next);
    canonical = std::move(child);
  }
  return {};
}

Status LayerApplier::Finish() {
  parents_.clear();
  // Reverse order visits "a/b" before "a": children before their parents.
  for (auto it = dir_attrs_.rbegin(); it != dir_attrs_.rend(); ++it) {
    const auto& [path, attrs] = *it;
    auto dir = OpenInRoot(root_.get(), path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
    if (!dir) continue;  // replaced by a later entry
    if (::fchmod(dir->get(), attrs.mode) != 0) return FailSys("fchmod", path);
    if (attrs.has_mtime) {
      timespec times[2] = {attrs.mtime, attrs.mtime};
      if (::futimens(dir->get(), times) != 0) return FailSys("futimens", path);
    }
  }
  return {};
}

}  // namespace sandbox::rootfs
