// Shared by the namespace backend's tests: finding a rootfs and the agent, building a backend
// on a private state dir, and running a program in a sandbox to EOF.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "runtime/agent/host/agent_client.h"
#include "runtime/backend.h"
#include "runtime/ns/namespace_backend.h"
#include "runtime/session/session_id.h"
#include "tests/support/test_support.h"

namespace sandbox::testing {

// Which image a test wants: the small one starts fastest; the full one has the data-science
// stack (either is taken when only the other is there).
enum class TestImage { kSmall, kFull };
// A rootfs the current user can read: $SANDBOX_TEST_ROOTFS, else the image store's
// "python-small" or "python" (the preferred one first; the default state dir, then
// /var/lib/mcp-sandbox), else /var/tmp/ns-rootfs (a dev machine's mmdebstrap tree). Skips the
// test when there is none.
std::string TestRootfs(TestImage preferred = TestImage::kSmall);
// The agent dir (sandbox-init + worker.py) of the build tree. Skips when it is missing.
std::string TestAgentDir();
// Whether the rootfs has `path` (inside path, e.g. "/usr/bin/python3").
bool RootfsHas(const std::string& rootfs, const std::string& path);

// A backend on a fresh state dir in `tmp`, with the host's cgroup manager under a parent group
// of its own ("mcp-sandbox-test-<pid>"): a sweep in one test process must not take the cgroups
// of another's sandboxes. The parent groups are removed with the backend.
class TestBackend : public NamespaceBackend {
 public:
  TestBackend(NamespaceBackend::Options options, std::unique_ptr<CgroupManager> cgroups);
  ~TestBackend() override;  // call after its sandboxes are gone

 private:
  std::vector<std::string> cgroup_parents_;
};
// `owner` names the cgroup parent group ("" = mcp-sandbox-test-<pid>).
std::unique_ptr<TestBackend> MakeBackend(const TempDir& tmp, const std::string& owner = "");
SandboxSpec MakeSpec(const std::string& rootfs, const std::string& agent_dir);

// Reads the sandbox's stream until EOF or the deadline.
struct StreamOutput {
  std::string text;
  bool eof = false;  // false: the deadline passed first
};
StreamOutput ReadToEof(Sandbox& sandbox, std::chrono::milliseconds timeout);

// Starts /bin/sh -c `script` (stderr joined to stdout) and returns what it printed.
StreamOutput RunShell(NamespaceBackend& backend, const SandboxSpec& spec, const std::string& script,
                      std::chrono::milliseconds timeout = std::chrono::seconds(30));

// A sandbox running the agent, ready (hello received). REQUIREs success.
struct AgentSandbox {
  std::unique_ptr<Sandbox> sandbox;
  std::unique_ptr<AgentClient> client;

  NamespaceSandbox& ns() { return static_cast<NamespaceSandbox&>(*sandbox); }
  // Runs Python / a shell command; REQUIREs a result (a failing cell is still a result).
  RunResult Python(const std::string& code, double timeout_s = 30);
  RunResult Shell(const std::string& command, double timeout_s = 30);
};
AgentSandbox StartAgent(NamespaceBackend& backend, const SandboxSpec& spec);

// Processes on the host whose real uid is `uid` (pids).
std::vector<int> HostProcessesOfUid(unsigned uid);
// True if a process with this pid exists and has this start time.
bool ProcessAlive(int pid, unsigned long long start_time);

}  // namespace sandbox::testing
