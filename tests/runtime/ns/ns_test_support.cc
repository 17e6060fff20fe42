#include "tests/runtime/ns/ns_test_support.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>

#include <catch2/catch.hpp>

#include "rootfs/store.h"
#include "runtime/agent/host/agent_dir.h"
#include "runtime/base/files.h"
#include "runtime/cgroup/cgroup_limits.h"
#include "runtime/ns/process_identity.h"
#include "runtime/session/session_id.h"

namespace sandbox::testing {

namespace {

bool Readable(const std::string& dir) {
  return ::access((dir + "/usr/bin").c_str(), R_OK | X_OK) == 0 &&
         ::access((dir + "/proc").c_str(), F_OK) == 0;
}

std::string FromStore(const std::string& state_dir, TestImage preferred) {
  rootfs::ImageStore store(state_dir);
  const bool small_first = preferred == TestImage::kSmall;
  for (const char* name :
       {small_first ? "python-small" : "python", small_first ? "python" : "python-small"}) {
    auto image = store.Find(name);
    if (image && Readable(image->rootfs)) return image->rootfs;
  }
  return "";
}

}  // namespace

std::string TestRootfs(TestImage preferred) {
  if (const char* env = std::getenv("SANDBOX_TEST_ROOTFS"); env != nullptr && *env != '\0') {
    if (!Readable(env)) SkipTest(std::string("SANDBOX_TEST_ROOTFS=") + env + " is not readable");
    return env;
  }
  for (const std::string& state_dir :
       {rootfs::ImageStore::DefaultStateDir(), std::string("/var/lib/mcp-sandbox")}) {
    if (std::string found = FromStore(state_dir, preferred); !found.empty()) return found;
  }
  if (Readable("/var/tmp/ns-rootfs")) return "/var/tmp/ns-rootfs";
  SkipTest(
      "no image rootfs readable by this user: build one with `mcp-sandbox image build` "
      "or set SANDBOX_TEST_ROOTFS");
}

std::string TestAgentDir() {
  auto dir = FindAgentDir();
  if (!dir) SkipTest("agent dir not found: " + dir.error().message);
  return *dir;
}

bool RootfsHas(const std::string& rootfs, const std::string& path) {
  struct stat st;
  return ::lstat((rootfs + path).c_str(), &st) == 0;
}

TestBackend::TestBackend(NamespaceBackend::Options options, std::unique_ptr<CgroupManager> cgroups)
    : NamespaceBackend(std::move(options), std::move(cgroups)) {
  cgroup_parents_ = this->cgroups().parent_dirs();
}

TestBackend::~TestBackend() {
  for (const std::string& dir : cgroup_parents_) ::rmdir(dir.c_str());
}

std::unique_ptr<TestBackend> MakeBackend(const TempDir& tmp, const std::string& owner) {
  NamespaceBackend::Options options;
  options.state_dir = tmp.Join("state");
  options.agent_dir = TestAgentDir();
  return std::make_unique<TestBackend>(
      options, CgroupManager::Detect(
                   owner.empty() ? "mcp-sandbox-test-" + std::to_string(::getpid()) : owner));
}

SandboxSpec MakeSpec(const std::string& rootfs, const std::string& agent_dir) {
  SandboxSpec spec;
  spec.session_id = NewSessionId();
  spec.image_name = "test";
  spec.rootfs = rootfs;
  spec.agent_dir = agent_dir;
  spec.env = {"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/mnt/data", "LANG=C.UTF-8"};
  spec.limits.memory_bytes = 256ull << 20;
  spec.limits.pids = 128;
  spec.limits.disk_bytes = 16ull << 20;
  spec.limits.tmp_bytes = 16ull << 20;
  return spec;
}

StreamOutput ReadToEof(Sandbox& sandbox, std::chrono::milliseconds timeout) {
  StreamOutput out;
  auto deadline = Clock::now() + timeout;
  char buf[8192];
  for (;;) {
    auto n = sandbox.stream().Read(buf, sizeof buf, deadline);
    if (!n) return out;
    if (*n == 0) {
      out.eof = true;
      return out;
    }
    out.text.append(buf, *n);
  }
}

StreamOutput RunShell(NamespaceBackend& backend, const SandboxSpec& spec, const std::string& script,
                      std::chrono::milliseconds timeout) {
  auto sandbox = backend.StartProgram(spec, {"/bin/sh", "-c", "exec 2>&1; " + script});
  if (!sandbox) FAIL("start: " << sandbox.error().message);
  return ReadToEof(**sandbox, timeout);
}

AgentSandbox StartAgent(NamespaceBackend& backend, const SandboxSpec& spec) {
  AgentSandbox out;
  auto started = backend.Start(spec);
  if (!started) FAIL("start: " << started.error().message);
  out.sandbox = std::move(*started);
  out.client = std::make_unique<AgentClient>(out.sandbox->stream());
  auto ready = out.client->WaitReady(std::chrono::seconds(20));
  if (!ready) FAIL("agent hello: " << ready.error().message);
  return out;
}

RunResult AgentSandbox::Python(const std::string& code, double timeout_s) {
  RunRequest request;
  request.code = code;
  request.timeout_s = timeout_s;
  auto result = client->Run(request);
  if (!result) FAIL("run: " << result.error().message);
  return *result;
}

RunResult AgentSandbox::Shell(const std::string& command, double timeout_s) {
  RunRequest request;
  request.kind = RunRequest::Kind::kShell;
  request.code = command;
  request.timeout_s = timeout_s;
  auto result = client->Run(request);
  if (!result) FAIL("run: " << result.error().message);
  return *result;
}

std::vector<int> HostProcessesOfUid(unsigned uid) {
  std::vector<int> pids;
  DIR* dir = ::opendir("/proc");
  if (dir == nullptr) return pids;
  while (dirent* entry = ::readdir(dir)) {
    if (entry->d_name[0] < '0' || entry->d_name[0] > '9') continue;
    struct stat st;
    std::string path = std::string("/proc/") + entry->d_name;
    if (::stat(path.c_str(), &st) == 0 && st.st_uid == uid)
      pids.push_back(std::atoi(entry->d_name));
  }
  ::closedir(dir);
  return pids;
}

bool ProcessAlive(int pid, unsigned long long start_time) {
  return ns::ProcessIdentity{pid, start_time}.IsAlive();
}

}  // namespace sandbox::testing
