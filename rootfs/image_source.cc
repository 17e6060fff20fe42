#include "rootfs/image_source.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <vector>

#include "rootfs/in_root.h"

namespace sandbox::rootfs {
namespace {

std::vector<std::string> SplitPath(const std::string& path) {
  std::vector<std::string> parts;
  size_t pos = 0;
  while (pos <= path.size()) {
    size_t slash = path.find('/', pos);
    if (slash == std::string::npos) slash = path.size();
    if (slash > pos) parts.push_back(path.substr(pos, slash - pos));
    pos = slash + 1;
  }
  return parts;
}

std::string JoinPath(const std::vector<std::string>& parts) {
  std::string out;
  for (const auto& part : parts) {
    if (!out.empty()) out.push_back('/');
    out += part;
  }
  return out;
}

// Applies "." and ".." lexically onto `resolved`, clamping at the top.
void PushComponent(std::vector<std::string>& resolved, const std::string& part) {
  if (part == ".") return;
  if (part == "..") {
    if (!resolved.empty()) resolved.pop_back();
    return;
  }
  resolved.push_back(part);
}

}  // namespace

std::string NormalizeMemberName(const std::string& name) {
  std::vector<std::string> resolved;
  for (const auto& part : SplitPath(name)) PushComponent(resolved, part);
  return JoinPath(resolved);
}

Result<std::unique_ptr<ImageSource>> ImageSource::Open(const std::string& path,
                                                       const std::string& spool_dir,
                                                       uint64_t max_bytes, uint64_t max_members) {
  std::unique_ptr<ImageSource> source(new ImageSource());
  source->path_ = path;
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) return FailSys("open", path);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return FailSys("fstat", path);
  if (S_ISDIR(st.st_mode)) {
    source->is_directory_ = true;
    source->fd_ = std::move(fd);
    return source;
  }
  if (!S_ISREG(st.st_mode)) {
    return Fail(ErrorCode::kInvalidArgument, "{} is neither a file nor a directory", path);
  }
  FileSection whole{fd.get(), 0, static_cast<uint64_t>(st.st_size)};
  SBX_ASSIGN_OR_RETURN(Compression compression, SniffCompression(whole));
  if (compression == Compression::kNone) {
    source->fd_ = std::move(fd);
    source->tar_size_ = whole.size;
  } else {
    // A compressed archive cannot be read in place by offset: decompress it once into an
    // unlinked temp file next to the store (same filesystem, gone when closed).
    std::string templ = spool_dir + "/.tmp-spool-" + std::to_string(::getpid()) + "-XXXXXX";
    Fd spool(::mkostemp(templ.data(), O_CLOEXEC));
    if (!spool) return FailSys("mkostemp", templ);
    ::unlink(templ.c_str());
    SBX_TRY(DecompressToFd(whole, spool.get(), max_bytes));
    struct stat spooled {};
    if (::fstat(spool.get(), &spooled) != 0) return FailSys("fstat", templ);
    source->fd_ = std::move(spool);
    source->tar_size_ = static_cast<uint64_t>(spooled.st_size);
  }
  SBX_TRY(source->IndexTar(max_members));
  return source;
}

Status ImageSource::IndexTar(uint64_t max_members) {
  SBX_ASSIGN_OR_RETURN(auto members, ListTarMembers(fd_.get(), max_members));
  for (auto& member : members) {
    std::string name = NormalizeMemberName(member.name);
    if (name.empty()) continue;
    members_[name] = std::move(member);  // a later duplicate wins, as tar extraction would
  }
  return {};
}

Result<const TarMember*> ImageSource::ResolveMember(const std::string& name) const {
  std::vector<std::string> pending = SplitPath(name);
  std::reverse(pending.begin(), pending.end());  // a stack: next component at the back
  std::vector<std::string> resolved;
  int hops = 0;
  auto too_many = [&] {
    return Fail(ErrorCode::kInvalidArgument, "too many levels of links resolving '{}' in {}", name,
                path_);
  };
  while (!pending.empty()) {
    std::string part = std::move(pending.back());
    pending.pop_back();
    PushComponent(resolved, part);
    if (part == "." || part == "..") continue;
    auto it = members_.find(JoinPath(resolved));
    if (it == members_.end() || it->second.type != TarMember::Type::kSymlink) continue;
    if (++hops > 40) return too_many();
    // Relative targets resolve from the link's directory, absolute ones from the top.
    resolved.pop_back();
    const std::string& target = it->second.link_target;
    if (!target.empty() && target[0] == '/') resolved.clear();
    auto target_parts = SplitPath(target);
    for (auto rit = target_parts.rbegin(); rit != target_parts.rend(); ++rit) {
      pending.push_back(*rit);
    }
  }
  auto it = members_.find(JoinPath(resolved));
  while (it != members_.end() && it->second.type == TarMember::Type::kHardlink) {
    if (++hops > 40) return too_many();
    it = members_.find(NormalizeMemberName(it->second.link_target));
  }
  if (it == members_.end()) {
    return Fail(ErrorCode::kNotFound, "'{}' is missing from {}", name, path_);
  }
  if (it->second.type != TarMember::Type::kFile || it->second.sparse) {
    return Fail(ErrorCode::kInvalidArgument, "'{}' in {} is not a regular file", name, path_);
  }
  return &it->second;
}

Result<FileSection> ImageSource::Find(const std::string& name) const {
  if (!is_directory_) {
    SBX_ASSIGN_OR_RETURN(const TarMember* member, ResolveMember(name));
    if (member->data_offset + member->size > tar_size_) {
      return Fail(ErrorCode::kInvalidArgument, "'{}' is truncated in {}", name, path_);
    }
    return FileSection{fd_.get(), member->data_offset, member->size};
  }
  // A layout directory may itself be hostile: its symlinks resolve inside it.
  auto fd = OpenInRoot(fd_.get(), name, O_RDONLY, 0, Confinement::kSource);
  if (!fd) {
    if (fd.error().sys_errno == ENOENT) {
      return Fail(ErrorCode::kNotFound, "'{}' is missing from {}", name, path_);
    }
    return Fail(std::move(fd.error()).Context(path_));
  }
  struct stat st {};
  if (::fstat(fd->get(), &st) != 0) return FailSys("fstat", name);
  if (!S_ISREG(st.st_mode)) {
    return Fail(ErrorCode::kInvalidArgument, "'{}' in {} is not a regular file", name, path_);
  }
  opened_.push_back(std::make_unique<Fd>(std::move(*fd)));
  return FileSection{opened_.back()->get(), 0, static_cast<uint64_t>(st.st_size)};
}

Result<std::string> ImageSource::ReadSmall(const std::string& name, uint64_t max_bytes) const {
  SBX_ASSIGN_OR_RETURN(FileSection section, Find(name));
  if (section.size > max_bytes) {
    return Fail(ErrorCode::kInvalidArgument, "'{}' is larger than {} bytes", name, max_bytes);
  }
  std::string out(static_cast<size_t>(section.size), '\0');
  size_t done = 0;
  while (done < out.size()) {
    ssize_t n = ::pread(section.fd, out.data() + done, out.size() - done,
                        static_cast<off_t>(section.offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return FailSys("pread", name);
    if (n == 0) return Fail(ErrorCode::kInvalidArgument, "'{}' is truncated", name);
    done += static_cast<size_t>(n);
  }
  return out;
}

FileSection ImageSource::WholeTar() const { return FileSection{fd_.get(), 0, tar_size_}; }

bool ImageSource::LooksLikeRootfs() const {
  for (const char* top : {"bin", "usr", "etc"}) {
    if (members_.count(top) > 0) return true;
    // Entries may come without their directory entry ("usr/bin/env" only).
    std::string prefix = std::string(top) + "/";
    for (const auto& [name, member] : members_) {
      if (name.compare(0, prefix.size(), prefix) == 0) return true;
    }
  }
  return false;
}

}  // namespace sandbox::rootfs
