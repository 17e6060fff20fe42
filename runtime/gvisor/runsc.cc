#include "runtime/gvisor/runsc.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <regex>

#include "runtime/base/fd.h"
#include "runtime/base/fd_ops.h"

namespace sandbox::gvisor {
namespace {

constexpr size_t kKeptStderrBytes = 2000;

bool IsExecutable(const std::string& path) { return ::access(path.c_str(), X_OK) == 0; }

// The end of a runsc error output: its last lines say what failed.
std::string Tail(const std::string& text) {
  std::string tail =
      text.size() > kKeptStderrBytes ? text.substr(text.size() - kKeptStderrBytes) : text;
  while (!tail.empty() && (tail.back() == '\n' || tail.back() == ' ')) tail.pop_back();
  return tail;
}

}  // namespace

Result<std::string> FindRunsc(const std::string& binary) {
  if (binary.empty()) return Fail(ErrorCode::kInvalidArgument, "SANDBOX_RUNSC is empty");
  if (binary.find('/') != std::string::npos) {
    if (IsExecutable(binary)) return binary;
    return Fail(ErrorCode::kNotFound, "runsc '{}' is not an executable file", binary);
  }
  const char* path = std::getenv("PATH");
  std::string list = path != nullptr && *path != '\0' ? path : "/usr/local/bin:/usr/bin:/bin";
  size_t start = 0;
  for (;;) {
    size_t colon = list.find(':', start);
    std::string dir = list.substr(start, colon == std::string::npos ? colon : colon - start);
    if (!dir.empty() && IsExecutable(dir + "/" + binary)) return dir + "/" + binary;
    if (colon == std::string::npos) break;
    start = colon + 1;
  }
  // The sbin dirs are not in every PATH, and Debian's package puts runsc in /usr/bin.
  for (const char* dir : {"/usr/sbin", "/usr/local/sbin", "/usr/bin"}) {
    std::string candidate = std::string(dir) + "/" + binary;
    if (IsExecutable(candidate)) return candidate;
  }
  return Fail(ErrorCode::kNotFound,
              "no '{}' in PATH (install gVisor: `apt-get install runsc` on Debian 12 or later, or "
              "see gvisor.dev/docs/user_guide/install; or set SANDBOX_RUNSC to its path)",
              binary);
}

int ParseReleaseDate(const std::string& version_line) {
  // Debian: "0.0~20221219.0"; upstream: "release-20230227.0".
  static const std::regex date(R"((?:~|release-)(20[0-9]{6}))");
  std::smatch match;
  if (!std::regex_search(version_line, match, date)) return 0;
  return std::atoi(match[1].str().c_str());
}

Result<RunscVersion> ReadRunscVersion(const std::string& runsc_path) {
  SBX_ASSIGN_OR_RETURN(std::string out, RunRunsc({runsc_path, "--version"}));
  RunscVersion version;
  version.line = out.substr(0, out.find('\n'));
  version.release = ParseReleaseDate(version.line);
  return version;
}

std::string PlatformProblem(const std::string& platform, int release) {
  if (platform == "ptrace") return "";
  if (platform == "systrap") {
    // Systrap arrived in release-20230227.0.
    if (release != 0 && release < 20230227) {
      return "this runsc (release " + std::to_string(release) +
             ") predates the systrap platform (release 20230227); use ptrace or kvm";
    }
    return "";
  }
  if (platform == "kvm") {
    int fd = ::open("/dev/kvm", O_RDWR | O_CLOEXEC);
    if (fd < 0) return std::string("kvm needs /dev/kvm: ") + std::strerror(errno);
    ::close(fd);
    return "";
  }
  return "'" + platform + "' is not one of ptrace, systrap, kvm";
}

std::vector<std::string> GlobalFlags(const RunscOptions& options, const std::string& runsc_path) {
  std::vector<std::string> argv = {runsc_path, "--root=" + options.root,
                                   "--platform=" + options.platform, "--network=none"};
  if (options.rootless) argv.push_back("--rootless");
  return argv;
}

Result<std::string> RunRunsc(const std::vector<std::string>& argv,
                             std::chrono::milliseconds timeout) {
  if (argv.empty()) return Fail(ErrorCode::kInvalidArgument, "no runsc command");
  Fd out_read, out_write, err_read, err_write;
  SBX_TRY(MakePipe(out_read, out_write));
  SBX_TRY(MakePipe(err_read, err_write));
  // Everything the child needs, made before the fork: it may only make async-signal-safe calls.
  std::vector<char*> args;
  args.reserve(argv.size() + 1);
  for (const std::string& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
  args.push_back(nullptr);
  Fd null(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  if (!null) return FailSys("open", "/dev/null");
  pid_t pid = ::fork();
  if (pid < 0) return FailSys("fork", argv[0]);
  if (pid == 0) {
    if (::dup2(null.get(), 0) < 0 || ::dup2(out_write.get(), 1) < 0 ||
        ::dup2(err_write.get(), 2) < 0) {
      ::_exit(127);
    }
    ::syscall(SYS_close_range, 3u, ~0u, 0u);
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  out_write.Reset();
  err_write.Reset();
  std::string out, err;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  bool timed_out = false;
  struct pollfd fds[2] = {{out_read.get(), POLLIN, 0}, {err_read.get(), POLLIN, 0}};
  std::string* sinks[2] = {&out, &err};
  int open_pipes = 2;
  while (open_pipes > 0) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      timed_out = true;
      break;
    }
    int n = ::poll(fds, 2, static_cast<int>(left.count()));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) continue;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      char buffer[4096];
      ssize_t got = ::read(fds[i].fd, buffer, sizeof buffer);
      if (got > 0) {
        sinks[i]->append(buffer, static_cast<size_t>(got));
      } else if (got == 0 || errno != EINTR) {
        fds[i].fd = -1;
        --open_pipes;
      }
    }
  }
  if (timed_out) ::kill(pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  // Named by its subcommand, the first argument that is not a flag.
  std::string command = "runsc";
  for (size_t i = 1; i < argv.size(); ++i) {
    if (argv[i].empty() || argv[i][0] == '-') continue;
    command += " " + argv[i];
    break;
  }
  if (timed_out) {
    return Fail(ErrorCode::kTimeout, "{} did not finish within {} ms", command, timeout.count());
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return Fail(ErrorCode::kSandboxUnavailable, "{} failed ({} {}): {}", command,
                WIFEXITED(status) ? "exit" : "signal",
                WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status), Tail(err + out));
  }
  return out;
}

}  // namespace sandbox::gvisor
