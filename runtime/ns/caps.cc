#include "runtime/ns/caps.h"

#include <errno.h>
#include <linux/capability.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace sandbox::ns {

int DropBoundingSet() {
  // Capability numbers are dense from 0; the kernel answers EINVAL past CAP_LAST_CAP.
  for (unsigned long cap = 0; cap < 64; ++cap) {
    if (::prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0) {
      if (errno == EINVAL && cap > 0) return 0;
      return errno;
    }
  }
  return 0;
}

int ClearAmbientSet() {
  return ::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) == 0 ? 0 : errno;
}

int ClearCapabilitySets() {
  struct __user_cap_header_struct header = {_LINUX_CAPABILITY_VERSION_3, 0};
  struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3] = {};
  if (::syscall(SYS_capset, &header, data) != 0) return errno;
  if (::syscall(SYS_capget, &header, data) != 0) return errno;
  for (const auto& word : data) {
    if (word.effective != 0 || word.permitted != 0 || word.inheritable != 0) return EPERM;
  }
  return 0;
}

}  // namespace sandbox::ns
