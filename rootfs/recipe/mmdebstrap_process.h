// A running mmdebstrap: its tarball arrives on a pipe (stdout_fd), its stderr is read line by
// line on a thread of its own (so neither pipe can fill up and stall the other) and handed to
// a callback, and the last lines are kept for the error message when it fails.
#pragma once

#include <sys/types.h>

#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "runtime/base/fd.h"
#include "runtime/base/result.h"

namespace sandbox::rootfs {

class MmdebstrapProcess {
 public:
  // Called from the reader thread with each stderr line ("I: downloading packages...").
  using LineCallback = std::function<void(std::string_view line)>;

  // Spawns argv[0] (looked up in PATH) with stdin from /dev/null; every stderr line also goes
  // to the file `log_path` (replaced). Fails when it cannot start, naming the program
  // (mmdebstrap missing: "apt-get install mmdebstrap").
  static Result<std::unique_ptr<MmdebstrapProcess>> Start(const std::vector<std::string>& argv,
                                                          LineCallback on_line,
                                                          const std::string& log_path);
  // Stops a process still running (SIGTERM: mmdebstrap then removes its temp dir) and reaps it.
  ~MmdebstrapProcess();
  MmdebstrapProcess(const MmdebstrapProcess&) = delete;
  MmdebstrapProcess& operator=(const MmdebstrapProcess&) = delete;

  // The read end of its stdout.
  int stdout_fd() const { return stdout_.get(); }

  // Closes stdout, waits for the exit and the end of stderr. Fails with the exit status, the
  // last lines of stderr and the log's path unless it exited 0.
  Status Wait();

 private:
  MmdebstrapProcess() = default;
  void ReadStderr(Fd stderr_fd);

  pid_t pid_ = -1;
  Fd stdout_;
  Fd log_;
  std::string log_path_;
  std::thread stderr_reader_;
  LineCallback on_line_;
  std::mutex mutex_;
  std::deque<std::string> last_lines_;  // guarded by mutex_
};

}  // namespace sandbox::rootfs
