#include "runtime/base/files.h"

#include <fcntl.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <system_error>

namespace sandbox {

Result<std::string> ReadFile(const std::string& path) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) return FailSys("open", path);
  std::string out;
  char buf[65536];
  for (;;) {
    ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      return FailSys("read", path);
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

Status WriteAll(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return FailSys("write");
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
  return {};
}

Status WriteFile(const std::string& path, std::string_view content, int mode) {
  Fd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode));
  if (!fd) return FailSys("open", path);
  if (auto st = WriteAll(fd.get(), content); !st) return Fail(std::move(st.error()).Context(path));
  return {};
}

Status CopyFileAtomic(const std::string& from, const std::string& to) {
  Fd in(::open(from.c_str(), O_RDONLY | O_CLOEXEC));
  if (!in) return FailSys("open", from);
  struct stat st {};
  if (::fstat(in.get(), &st) != 0) return FailSys("fstat", from);
  std::string tmp = to + ".tmp." + std::to_string(::getpid());
  Fd out(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (!out) return FailSys("open", tmp);
  off_t left = st.st_size;
  while (left > 0) {
    ssize_t n = ::sendfile(out.get(), in.get(), nullptr, static_cast<size_t>(left));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      int err = n < 0 ? errno : EIO;
      ::unlink(tmp.c_str());
      return FailSys("sendfile", to, err);
    }
    left -= n;
  }
  if (::fsync(out.get()) != 0 || ::rename(tmp.c_str(), to.c_str()) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    return FailSys("write", to, err);
  }
  return {};
}

Status WriteFileAtomic(const std::string& path, std::string_view content, int mode) {
  std::string tmp = path + ".tmp." + std::to_string(::getpid());
  {
    Fd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode));
    if (!fd) return FailSys("open", tmp);
    if (auto st = WriteAll(fd.get(), content); !st) {
      ::unlink(tmp.c_str());
      return Fail(std::move(st.error()).Context(tmp));
    }
    if (::fsync(fd.get()) != 0) {
      int err = errno;
      ::unlink(tmp.c_str());
      return FailSys("fsync", tmp, err);
    }
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    return FailSys("rename", path, err);
  }
  return {};
}

Status MakeDirs(const std::string& path, int mode) {
  std::error_code ec;
  std::filesystem::create_directories(path, ec);
  if (ec) return FailSys("mkdir", path, ec.value());
  (void)mode;
  return {};
}

Status RemoveTree(const std::string& path) {
  std::error_code ec;
  // Make read-only directories writable first so their entries can go (images hold 0555 dirs).
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return {};
    return FailSys("lstat", path);
  }
  if (S_ISDIR(st.st_mode)) {
    for (auto it = std::filesystem::recursive_directory_iterator(
             path, std::filesystem::directory_options::none, ec);
         !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
      if (it->is_directory(ec) && !it->is_symlink(ec)) {
        ::chmod(it->path().c_str(), 0700);
      }
    }
    ::chmod(path.c_str(), 0700);
  }
  std::filesystem::remove_all(path, ec);
  if (ec) return FailSys("remove_all", path, ec.value());
  return {};
}

}  // namespace sandbox
