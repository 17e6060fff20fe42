#include "tests/runtime/cgroup/cgroup_test_util.h"

#include <fcntl.h>
#include <grp.h>

#include <atomic>
#include <chrono>

#include <fmt/format.h>

#include "runtime/cgroup/background_cpu.h"
#include "runtime/cgroup/cgroup_fs.h"

namespace sandbox::testing {

GatedChild::GatedChild(std::function<int()> body) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) std::abort();
  pid_ = ::fork();
  if (pid_ < 0) std::abort();
  if (pid_ == 0) {
    ::close(fds[1]);
    char go = 0;
    if (::read(fds[0], &go, 1) != 1) ::_exit(100);
    ::_exit(body());
  }
  ::close(fds[0]);
  go_fd_ = fds[1];
}

GatedChild::~GatedChild() {
  if (go_fd_ >= 0) ::close(go_fd_);
  if (!reaped_ && pid_ > 0) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
}

void GatedChild::Go() {
  char go = 1;
  if (::write(go_fd_, &go, 1) != 1) std::abort();
  ::close(go_fd_);
  go_fd_ = -1;
}

int GatedChild::Wait() {
  int status = 0;
  while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  reaped_ = true;
  return status;
}

void WriteString(int fd, const std::string& text) {
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n <= 0) return;
    done += static_cast<size_t>(n);
  }
}

ChildOutcome RunInChild(const std::function<int(int out_fd)>& body) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) std::abort();
  pid_t pid = ::fork();
  if (pid < 0) std::abort();
  if (pid == 0) {
    ::close(fds[0]);
    int code = body(fds[1]);
    ::_exit(code);
  }
  ::close(fds[1]);
  ChildOutcome outcome;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(fds[0], buf, sizeof buf)) > 0)
    outcome.output.append(buf, static_cast<size_t>(n));
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  outcome.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return outcome;
}

bool DropTo(uid_t id) {
  return ::setgroups(0, nullptr) == 0 && ::setresgid(id, id, id) == 0 &&
         ::setresuid(id, id, id) == 0;
}

long QuotaOf(const SandboxCgroup& group) {
  for (const auto& dir : group.paths()) {
    if (auto v2 = cgroup::ReadControl(dir + "/cpu.max")) {
      auto parsed = cgroup::ParseCpuMax(*v2);
      return parsed ? parsed->first : -2;
    }
    if (auto v1 = cgroup::ReadControl(dir + "/cpu.cfs_quota_us")) return std::stol(*v1);
  }
  return -2;
}

std::string UniqueOwner() {
  static std::atomic<int> counter{0};
  return fmt::format("mcp-sandbox-test-{}-{}", ::getpid(), counter++);
}

ScopedEnv::ScopedEnv(std::string name, std::optional<std::string> value) : name_(std::move(name)) {
  if (const char* old = ::getenv(name_.c_str())) saved_ = old;
  if (value) {
    ::setenv(name_.c_str(), value->c_str(), 1);
  } else {
    ::unsetenv(name_.c_str());
  }
}

ScopedEnv::~ScopedEnv() {
  if (saved_) {
    ::setenv(name_.c_str(), saved_->c_str(), 1);
  } else {
    ::unsetenv(name_.c_str());
  }
}

void RemoveParents(const CgroupManager& manager) {
  for (const auto& dir : manager.parent_dirs()) {
    (void)cgroup::RemoveCgroupDir(dir, std::chrono::milliseconds(2000));
  }
}

Limits SmallLimits() {
  Limits limits;
  limits.memory_bytes = 32ull << 20;
  limits.pids = 8;
  limits.cpus = 0.5;
  return limits;
}

}  // namespace sandbox::testing
