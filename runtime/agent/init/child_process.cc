#include "runtime/agent/init/child_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstring>

#include "runtime/base/fd_ops.h"

namespace sandbox::agent {

namespace {

// Child-side fds are moved above this before being placed on 0..4, so a source fd that happens
// to be 3 or 4 is not overwritten by an earlier dup2.
constexpr int kScratchFdBase = 10;

struct ChildFds {
  int stdin_fd;
  int stdout_fd;
  int stderr_fd;
  int control_in_fd;   // -1 without a control channel
  int control_out_fd;  // -1 without a control channel
};

// Async-signal-safe: raw write of a C string.
void WriteRaw(int fd, const char* text) {
  ssize_t ignored = ::write(fd, text, ::strlen(text));
  (void)ignored;
}

// Async-signal-safe: writes "<what>: errno <n>\n" to fd 2 and exits with `status`.
[[noreturn]] void DieInChild(const char* what, int err, int status) {
  char digits[16];
  int len = 0;
  unsigned value = static_cast<unsigned>(err);
  do {
    digits[len++] = static_cast<char>('0' + value % 10);
    value /= 10;
  } while (value != 0 && len < 15);
  char number[16];
  for (int i = 0; i < len; ++i) number[i] = digits[len - 1 - i];
  number[len] = '\0';
  WriteRaw(2, "sandbox-init: ");
  WriteRaw(2, what);
  WriteRaw(2, ": errno ");
  WriteRaw(2, number);
  WriteRaw(2, "\n");
  ::_exit(status);
}

// Runs in the forked child, between fork and execve: async-signal-safe calls only (HELPERS.md).
[[noreturn]] void ExecInChild(const ChildFds& fds, pid_t parent, const char* executable,
                              char* const* argv, char* const* envp, const char* cwd) {
  // init blocks SIGCHLD/SIGTERM/... for its signalfd and ignores SIGPIPE; both survive execve,
  // and Python only installs its SIGINT handler when SIGINT is not ignored at start.
  sigset_t empty;
  sigemptyset(&empty);
  sigprocmask(SIG_SETMASK, &empty, nullptr);
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  for (int sig = 1; sig < NSIG; ++sig) {
    if (sig != SIGKILL && sig != SIGSTOP) sigaction(sig, &dfl, nullptr);
  }
  setpgid(0, 0);
  // The worker must not outlive init (matters when init is not pid 1 of a pid namespace).
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) ::_exit(1);

  const int sources[5] = {fds.stdin_fd, fds.stdout_fd, fds.stderr_fd, fds.control_in_fd,
                          fds.control_out_fd};
  int moved[5];
  for (int i = 0; i < 5; ++i) {
    moved[i] = -1;
    if (sources[i] < 0) continue;
    moved[i] = fcntl(sources[i], F_DUPFD_CLOEXEC, kScratchFdBase);
    if (moved[i] < 0) DieInChild("fcntl(F_DUPFD_CLOEXEC)", errno, 127);
  }
  for (int target = 0; target < 5; ++target) {
    if (moved[target] < 0) continue;
    if (dup2(moved[target], target) < 0) DieInChild("dup2", errno, 127);  // clears CLOEXEC
  }
  // Everything else init holds is O_CLOEXEC already; this also covers fds a future change
  // forgets to mark. close_range may be filtered by seccomp (ENOSYS): then CLOEXEC must do.
  int first_free = fds.control_out_fd >= 0 ? 5 : fds.control_in_fd >= 0 ? 4 : 3;
  syscall(SYS_close_range, static_cast<unsigned>(first_free), ~0U, 0U);

  // Under memory pressure the OOM killer should pick the worker or the command (the session
  // survives: the worker restarts) rather than init (the session would end). Raising one's own
  // score needs no privilege; failure (no /proc) is harmless.
  int oom = ::open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
  if (oom >= 0) {
    ssize_t ignored = ::write(oom, "500", 3);
    (void)ignored;
    ::close(oom);
  }
  if (chdir(cwd) != 0) DieInChild("chdir", errno, 126);
  execve(executable, argv, envp);
  DieInChild("execve", errno, 127);
}

std::vector<char*> CStringArray(const std::vector<std::string>& strings) {
  std::vector<char*> out;
  out.reserve(strings.size() + 1);
  for (const auto& s : strings) out.push_back(const_cast<char*>(s.c_str()));
  out.push_back(nullptr);
  return out;
}

}  // namespace

Result<ChildEnds> MakeChildEnds(bool control_channel, ChildProcess& child) {
  ChildEnds ends;
  ends.stdin_null.Reset(::open("/dev/null", O_RDWR | O_CLOEXEC));
  if (!ends.stdin_null) return FailSys("open", "/dev/null");
  SBX_TRY(MakePipe(child.stdout_read, ends.stdout_write));
  SBX_TRY(MakePipe(child.stderr_read, ends.stderr_write));
  SBX_TRY(SetNonBlocking(child.stdout_read.get()));
  SBX_TRY(SetNonBlocking(child.stderr_read.get()));
  if (control_channel) {
    SBX_TRY(MakePipe(ends.control_in_read, child.control_write));
    SBX_TRY(MakePipe(child.control_read, ends.control_out_write));
    SBX_TRY(SetNonBlocking(child.control_read.get()));
    // init queues what the worker does not take yet (Agent::FlushControl), never blocks on it.
    SBX_TRY(SetNonBlocking(child.control_write.get()));
  }
  return ends;
}

Result<ChildProcess> SpawnChild(const ChildSpec& spec) {
  ChildProcess child;
  SBX_ASSIGN_OR_RETURN(ChildEnds ends, MakeChildEnds(spec.control_channel, child));

  std::vector<char*> argv = CStringArray(spec.argv);
  std::vector<char*> envp = CStringArray(spec.env);
  ChildFds fds{ends.stdin_null.get(), ends.stdout_write.get(), ends.stderr_write.get(),
               spec.control_channel ? ends.control_in_read.get() : spec.fd3,
               spec.control_channel ? ends.control_out_write.get() : -1};
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) return FailSys("fork");
  if (pid == 0) {
    ExecInChild(fds, parent, spec.executable.c_str(), argv.data(), envp.data(), spec.cwd.c_str());
  }
  // Also from this side, so a kill of the group right after fork cannot miss the child.
  setpgid(pid, pid);
  child.pid = pid;
  return child;
}

Result<std::string> FindExecutable(const std::string& name, const std::string& path_list) {
  if (name.find('/') != std::string::npos) {
    if (::access(name.c_str(), X_OK) != 0) return FailSys("access", name);
    return name;
  }
  size_t start = 0;
  while (start <= path_list.size()) {
    size_t end = path_list.find(':', start);
    if (end == std::string::npos) end = path_list.size();
    // An empty entry means the current directory, as for execvp.
    std::string dir = end > start ? path_list.substr(start, end - start) : std::string(".");
    std::string candidate = dir + "/" + name;
    struct stat st {};
    if (::stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
        ::access(candidate.c_str(), X_OK) == 0) {
      return candidate;
    }
    start = end + 1;
  }
  return Fail(ErrorCode::kNotFound, "{} not found in PATH ({})", name, path_list);
}

}  // namespace sandbox::agent
