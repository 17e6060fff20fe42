// Capabilities of the sandbox process: all of them go (bounding, ambient, inheritable,
// permitted, effective). Child side: every function here runs between clone and execve and is
// async-signal-safe; each returns 0 or the errno of the failing call.
//
// Why explicit: in our user namespace the sandbox uid is not the namespace's root (0 is not
// mapped), so setresuid(2) does not apply the "root -> non-root drops capabilities" rule
// (capabilities(7)); the child must clear them itself.
#pragma once

namespace sandbox::ns {

// Drops every capability from the bounding set (needs CAP_SETPCAP: call before the uid change).
int DropBoundingSet();
// Clears the ambient set.
int ClearAmbientSet();
// Clears inheritable, permitted and effective with capset(2) and checks with capget(2).
int ClearCapabilitySets();

}  // namespace sandbox::ns
