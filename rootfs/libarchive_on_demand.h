// libarchive, loaded the first time an archive_* function is called rather than when the program
// starts (libarchive_on_demand.cc defines the archive_* functions this program calls, forwarding
// to libarchive.so.13 opened with dlopen): a run that never reads or writes an archive never
// loads it and the ten libraries it pulls in.
#pragma once

#include <string>

namespace sandbox::rootfs {

// Why libarchive.so.13 could not be loaded (dlopen's message or the missing symbol), or empty
// when it was loaded or has not been needed yet.
std::string LibarchiveLoadError();

}  // namespace sandbox::rootfs
