// Who owns a container: the server process that created it, as "<boot id>/<pid>/<start time>"
// (start time in clock ticks since boot, proc(5) /proc/pid/stat field 22). The orphan sweep
// removes a labelled container only when its owner is gone, so two servers sharing one daemon
// never sweep each other's live sandboxes.
#pragma once

#include <string>
#include <string_view>

namespace sandbox::docker {

// The owner label value for this process.
std::string CurrentOwner();

// Whether the process named by `owner` still runs on this boot. A malformed value counts as
// gone (it cannot belong to a live server of ours).
bool OwnerIsAlive(std::string_view owner);

// The start time field of /proc/<pid>/stat text, or "" when malformed. Pure.
std::string StartTimeFromStat(std::string_view stat);

}  // namespace sandbox::docker
