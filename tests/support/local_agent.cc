#include "tests/support/local_agent.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include "runtime/base/files.h"
#include "runtime/sandbox_layout.h"
#include "tests/support/test_support.h"

namespace sandbox::testing {

std::string SandboxInitPath() { return BinaryDir() + "/agent/sandbox-init"; }

namespace {

bool WriteProc(const char* path, const std::string& text) {
  int fd = ::open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ::close(fd);
  return ok;
}

// In the child, before exec (async-signal-safe calls only): a user namespace mapping the
// caller's ids to themselves, a mount namespace, a tmpfs over /mnt with data/ bound from
// data_dir, and tmp_dir bound over /tmp.
bool ShowSandboxPaths(const LocalAgentOptions& options, const std::string& uid_map,
                      const std::string& gid_map) {
  if (::unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0) return false;
  if (!WriteProc("/proc/self/setgroups", "deny") || !WriteProc("/proc/self/uid_map", uid_map) ||
      !WriteProc("/proc/self/gid_map", gid_map)) {
    return false;
  }
  if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) return false;
  if (::mount("sbx-host", "/mnt", "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755") != 0) return false;
  if (::mkdir("/mnt/data", 0755) != 0) return false;
  if (::mount(options.data_dir.c_str(), "/mnt/data", nullptr, MS_BIND, nullptr) != 0) return false;
  return ::mount(options.tmp_dir.c_str(), "/tmp", nullptr, MS_BIND, nullptr) == 0;
}

}  // namespace

Result<std::unique_ptr<LocalAgent>> LocalAgent::Spawn(const LocalAgentOptions& options) {
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) return FailSys("socketpair");
  Fd ours(sv[0]);
  Fd theirs(sv[1]);
  std::string init = SandboxInitPath();
  std::string data_dir = options.sandbox_paths ? std::string(layout::kDataDir) : options.data_dir;
  std::string tmp_dir = options.sandbox_paths ? std::string(layout::kTmpDir) : options.tmp_dir;
  // Written by the child into its own user namespace (prepared here: no allocation after fork).
  std::string uid_map = std::to_string(::getuid()) + " " + std::to_string(::getuid()) + " 1";
  std::string gid_map = std::to_string(::getgid()) + " " + std::to_string(::getgid()) + " 1";
  std::vector<std::string> env_strings = {
      "PATH=/usr/local/bin:/usr/bin:/bin",
      "LANG=C.UTF-8",
      "SANDBOX_AGENT_DATA_DIR=" + data_dir,
      "SANDBOX_AGENT_TMP_DIR=" + tmp_dir,
      "SANDBOX_AGENT_PYTHON=" + options.python,
      "SANDBOX_AGENT_GRACE_MS=" + std::to_string(options.grace_ms),
  };
  env_strings.insert(env_strings.end(), options.env.begin(), options.env.end());
  std::vector<char*> envp;
  for (auto& entry : env_strings) envp.push_back(entry.data());
  envp.push_back(nullptr);
  char* argv[] = {init.data(), nullptr};
  pid_t parent = ::getpid();

  // clone() with fork semantics; CLONE_NEWPID makes the child pid 1 of a new pid namespace.
  unsigned long flags = SIGCHLD | (options.new_pid_namespace ? CLONE_NEWPID : 0);
  long pid = ::syscall(SYS_clone, flags, nullptr, nullptr, nullptr, nullptr);
  if (pid < 0) return FailSys("clone");
  if (pid == 0) {
    // Async-signal-safe only until execve.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (!options.new_pid_namespace && ::getppid() != parent) ::_exit(1);
    if (options.sandbox_paths && !ShowSandboxPaths(options, uid_map, gid_map)) ::_exit(125);
    if (::dup2(theirs.get(), 0) < 0 || ::dup2(theirs.get(), 1) < 0) ::_exit(126);
    ::execve(init.c_str(), argv, envp.data());
    ::_exit(127);
  }
  theirs.Reset();
  std::unique_ptr<LocalAgent> agent(new LocalAgent());
  agent->pid_ = static_cast<pid_t>(pid);
  agent->stream_ = std::make_unique<FdByteStream>(std::move(ours));
  agent->client_ = std::make_unique<AgentClient>(*agent->stream_);
  return agent;
}

Result<std::unique_ptr<LocalAgent>> LocalAgent::Start(const LocalAgentOptions& options) {
  SBX_ASSIGN_OR_RETURN(auto agent, Spawn(options));
  // Generous: this machine's Python starts in ~30 ms idle, seconds when the build saturates it.
  SBX_TRY(agent->client().WaitReady(std::chrono::seconds(60)));
  return agent;
}

int LocalAgent::WaitExit(std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    int status = 0;
    pid_t done = ::waitpid(pid_, &status, WNOHANG);
    if (done == pid_) {
      reaped_ = true;
      return status;
    }
    if (done < 0) return -1;
    if (std::chrono::steady_clock::now() >= deadline) return -1;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

LocalAgent::~LocalAgent() {
  if (reaped_) return;
  client_->Shutdown();
  if (WaitExit(std::chrono::seconds(5)) == -1 && !reaped_) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
}

bool PythonHasModule(const std::string& python, const std::string& module) {
  return RunShell(python + " -c 'import " + module + "' >/dev/null 2>&1") == 0;
}

char ProcessState(pid_t pid) {
  // Not an ifstream: reading the stat of a process that exits between open and read fails with
  // ESRCH, which libstdc++ throws from the stream buffer. Gone either way.
  auto read = ReadFile("/proc/" + std::to_string(pid) + "/stat");
  if (!read) return 0;
  const std::string& content = *read;
  size_t paren = content.rfind(')');
  if (paren == std::string::npos || paren + 2 >= content.size()) return 0;
  return content[paren + 2];
}

std::vector<pid_t> ChildrenOf(pid_t pid) {
  std::ifstream file("/proc/" + std::to_string(pid) + "/task/" + std::to_string(pid) + "/children");
  std::vector<pid_t> children;
  pid_t child = 0;
  while (file >> child) children.push_back(child);
  return children;
}

}  // namespace sandbox::testing
