#include "rootfs/recipe/mmdebstrap_process.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include "runtime/base/files.h"

extern char** environ;

namespace sandbox::rootfs {
namespace {

constexpr size_t kKeptLines = 30;

struct SpawnActions {
  posix_spawn_file_actions_t actions;
  SpawnActions() { posix_spawn_file_actions_init(&actions); }
  ~SpawnActions() { posix_spawn_file_actions_destroy(&actions); }
  SpawnActions(const SpawnActions&) = delete;
  SpawnActions& operator=(const SpawnActions&) = delete;
};

}  // namespace

Result<std::unique_ptr<MmdebstrapProcess>> MmdebstrapProcess::Start(
    const std::vector<std::string>& argv, LineCallback on_line, const std::string& log_path) {
  Fd log(::open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (!log) return FailSys("open", log_path);
  int out_pipe[2];
  int err_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0) return FailSys("pipe2");
  Fd out_read(out_pipe[0]), out_write(out_pipe[1]);
  if (::pipe2(err_pipe, O_CLOEXEC) != 0) return FailSys("pipe2");
  Fd err_read(err_pipe[0]), err_write(err_pipe[1]);

  // dup2 onto 0/1/2 clears O_CLOEXEC on the child's copies only; every other fd of ours stays
  // close-on-exec.
  SpawnActions spawn;
  posix_spawn_file_actions_addopen(&spawn.actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&spawn.actions, out_write.get(), 1);
  posix_spawn_file_actions_adddup2(&spawn.actions, err_write.get(), 2);

  std::vector<char*> cargv;
  cargv.reserve(argv.size() + 1);
  for (const auto& arg : argv) cargv.push_back(const_cast<char*>(arg.c_str()));
  cargv.push_back(nullptr);

  std::unique_ptr<MmdebstrapProcess> process(new MmdebstrapProcess());
  int rc = ::posix_spawnp(&process->pid_, cargv[0], &spawn.actions, nullptr, cargv.data(), environ);
  if (rc != 0) {
    auto error = SysError("posix_spawnp", argv[0], rc);
    if (rc == ENOENT)
      error = std::move(error).Context("install it with: apt-get install mmdebstrap");
    return Fail(std::move(error));
  }
  out_write.Reset();
  err_write.Reset();
  process->stdout_ = std::move(out_read);
  process->on_line_ = std::move(on_line);
  process->log_ = std::move(log);
  process->log_path_ = log_path;
  process->stderr_reader_ =
      std::thread(&MmdebstrapProcess::ReadStderr, process.get(), std::move(err_read));
  return process;
}

void MmdebstrapProcess::ReadStderr(Fd stderr_fd) {
  std::string pending;
  char buffer[4096];
  auto emit = [&](std::string line) {
    if (line.empty()) return;
    (void)WriteAll(log_.get(), line + "\n");  // a lost log line must not stop the build
    if (on_line_) on_line_(line);
    std::lock_guard<std::mutex> lock(mutex_);
    last_lines_.push_back(std::move(line));
    if (last_lines_.size() > kKeptLines) last_lines_.pop_front();
  };
  for (;;) {
    ssize_t n = ::read(stderr_fd.get(), buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    for (ssize_t i = 0; i < n; ++i) {
      // apt and dpkg redraw progress with '\r'; each redraw counts as a line.
      if (buffer[i] == '\n' || buffer[i] == '\r') {
        emit(std::move(pending));
        pending.clear();
      } else {
        pending.push_back(buffer[i]);
      }
    }
  }
  emit(std::move(pending));
}

Status MmdebstrapProcess::Wait() {
  stdout_.Reset();
  int status = 0;
  pid_t pid = std::exchange(pid_, -1);
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return FailSys("waitpid", "mmdebstrap");
  }
  if (stderr_reader_.joinable()) stderr_reader_.join();
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return {};

  std::string how = WIFEXITED(status) ? fmt::format("exited with status {}", WEXITSTATUS(status))
                                      : fmt::format("was killed by signal {}", WTERMSIG(status));
  std::string tail;
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& line : last_lines_) tail += "\n  " + line;
  return Fail(ErrorCode::kInternal, "mmdebstrap {}; its last messages:{}\n(full log: {})", how,
              tail, log_path_);
}

MmdebstrapProcess::~MmdebstrapProcess() {
  stdout_.Reset();
  if (pid_ > 0) {
    ::kill(pid_, SIGTERM);
    int status = 0;
    while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
  }
  if (stderr_reader_.joinable()) stderr_reader_.join();
}

}  // namespace sandbox::rootfs
