// The sandbox's network namespace: loopback only (DESIGN.md). A new network namespace has `lo`
// down; the child brings it up so 127.0.0.1 works inside (and reaches nothing outside).
#pragma once

namespace sandbox::ns {

// Child side (async-signal-safe): sets IFF_UP on "lo". Returns 0 or errno.
int BringUpLoopback();

}  // namespace sandbox::ns
