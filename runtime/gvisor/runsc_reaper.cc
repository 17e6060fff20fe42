#include "runtime/gvisor/runsc_reaper.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

#include "runtime/base/fd_ops.h"

namespace sandbox::gvisor {
namespace {

// The reaper's exit mirrors how `runsc run` ended: its exit code, or its signal raised again.
[[noreturn]] void ExitLike(int status) {
  if (WIFSIGNALED(status)) {
    ::signal(WTERMSIG(status), SIG_DFL);
    ::kill(::getpid(), WTERMSIG(status));
    ::kill(::getpid(), SIGKILL);  // a signal that would not end it
  }
  ::_exit(WIFEXITED(status) ? WEXITSTATUS(status) : 126);
}

}  // namespace

Result<RunscProcesses> ForkRunsc(const std::vector<std::string>& argv, int stream_fd, int log_fd,
                                 int go_fd, int null_fd) {
  Fd report_read, report_write;
  SBX_TRY(MakePipe(report_read, report_write));
  std::vector<char*> args;
  args.reserve(argv.size() + 1);
  for (const std::string& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
  args.push_back(nullptr);
  RunscProcesses forked;
  forked.reaper = ::fork();
  if (forked.reaper < 0) return FailSys("fork", "runsc reaper");
  if (forked.reaper == 0) {
    if (::prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0) ::_exit(126);
    (void)::prctl(PR_SET_NAME, "runsc-reaper", 0, 0, 0);  // what ps shows for it
    ::signal(SIGCHLD, SIG_DFL);  // its children's statuses are kept for waitpid
    // _Fork: no fork handlers here, where a lock another server thread held stays held.
    const pid_t runsc = ::_Fork();
    if (runsc == 0) {
      if (::dup2(stream_fd, 0) < 0 || ::dup2(stream_fd, 1) < 0 || ::dup2(log_fd, 2) < 0) {
        ::_exit(126);
      }
      // Only the read end of `go` kept: the parent's end closing (it gave up) is end of file.
      if (go_fd > 3) ::syscall(SYS_close_range, 3u, static_cast<unsigned>(go_fd - 1), 0u);
      ::syscall(SYS_close_range, static_cast<unsigned>(go_fd + 1), ~0u, 0u);
      char go = 0;
      ssize_t got;
      do {
        got = ::read(go_fd, &go, 1);
      } while (got < 0 && errno == EINTR);
      if (got != 1) ::_exit(126);  // the parent gave up
      ::syscall(SYS_close_range, 3u, ~0u, 0u);
      ::execv(args[0], args.data());
      ::_exit(127);
    }
    const bool reported = runsc > 0 && ::write(report_write.get(), &runsc, sizeof runsc) ==
                                           static_cast<ssize_t>(sizeof runsc);
    // Nothing of the server's is held open here: the sandbox's stream must end with runsc.
    if (::dup2(null_fd, 0) < 0 || ::dup2(null_fd, 1) < 0 || ::dup2(null_fd, 2) < 0) ::_exit(126);
    ::syscall(SYS_close_range, 3u, ~0u, 0u);
    if (!reported) ::_exit(126);
    int runsc_status = 126 << 8;
    for (;;) {
      int status = 0;
      pid_t reaped = ::waitpid(-1, &status, __WALL);
      if (reaped == runsc) runsc_status = status;
      if (reaped < 0 && errno == ECHILD) break;
    }
    ExitLike(runsc_status);
  }
  report_write.Reset();  // a reaper that ends before it reports: end of file
  pid_t runsc = -1;
  ssize_t got;
  do {
    got = ::read(report_read.get(), &runsc, sizeof runsc);
  } while (got < 0 && errno == EINTR);
  if (got != static_cast<ssize_t>(sizeof runsc) || runsc <= 0) {
    ::kill(forked.reaper, SIGKILL);
    ::waitpid(forked.reaper, nullptr, 0);
    return Fail(ErrorCode::kSandboxUnavailable, "the runsc reaper could not start runsc run");
  }
  forked.runsc = runsc;
  return forked;
}

}  // namespace sandbox::gvisor
