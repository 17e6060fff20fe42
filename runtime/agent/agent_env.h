// The environment variables that configure sandbox-init, spelled once for both sides: the host
// (the session manager and the backends) sets them in a sandbox's spec, init reads them in its
// main.cc and strips those that are its own business before its workers start. What each one
// means is said in init/main.cc's header.
#pragma once

namespace sandbox::agent_env {

inline constexpr char kDataDir[] = "SANDBOX_AGENT_DATA_DIR";
inline constexpr char kTmpDir[] = "SANDBOX_AGENT_TMP_DIR";
inline constexpr char kPython[] = "SANDBOX_AGENT_PYTHON";
inline constexpr char kWorker[] = "SANDBOX_AGENT_WORKER";
inline constexpr char kGraceMs[] = "SANDBOX_AGENT_GRACE_MS";
inline constexpr char kPreload[] = "SANDBOX_AGENT_PRELOAD";
inline constexpr char kPreloadOnRequest[] = "SANDBOX_AGENT_PRELOAD_ON_REQUEST";
inline constexpr char kEgressFd[] = "SANDBOX_AGENT_EGRESS_FD";
inline constexpr char kEgressSocket[] = "SANDBOX_AGENT_EGRESS_SOCKET";
inline constexpr char kEgressConnect[] = "SANDBOX_AGENT_EGRESS_CONNECT";
inline constexpr char kEgressPort[] = "SANDBOX_AGENT_EGRESS_PORT";

}  // namespace sandbox::agent_env
