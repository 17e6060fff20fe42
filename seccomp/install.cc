#include "seccomp/install.h"

#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

namespace sandbox::seccomp {

int InstallFilterRaw(const sock_fprog* prog) noexcept {
  const int saved_errno = errno;
  int err = 0;
  if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, prog) != 0) {
    err = errno;
    // seccomp(2) is Linux 3.17+; the prctl form has existed since 3.5.
    if (err == ENOSYS) {
      err = prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, prog, 0, 0) == 0 ? 0 : errno;
    }
  }
  errno = saved_errno;
  return err;
}

Status InstallCompiledPolicy(const BpfProgram& program) {
  const long rc =
      syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, program.prog());
  if (rc < 0) {
    const int err = errno;
    Error error = SysError("seccomp", "SECCOMP_SET_MODE_FILTER, TSYNC", err);
    if (err == EACCES) return Fail(std::move(error).Context("no_new_privs is not set"));
    return Fail(std::move(error));
  }
  if (rc > 0) {
    // TSYNC: the id of a thread that could not be synchronised (it has a diverging filter).
    return Fail(ErrorCode::kInternal, "seccomp TSYNC: thread {} cannot take the filter", rc);
  }
  return {};
}

}  // namespace sandbox::seccomp
