// Servers with different state dirs on one host keep out of each other's way: each sweeps the
// leftovers its own records know of, under a cgroup parent of its own, and never a live
// session of the other (as when a test suite runs next to a user's server).
#include <unistd.h>

#include <catch2/catch.hpp>

#include "runtime/agent/host/agent_client.h"
#include "runtime/session/backend_factory.h"
#include "tests/runtime/ns/ns_test_support.h"
#include "tests/support/test_support.h"

namespace sandbox {
namespace {

TEST_CASE("cgroup parent names: the system state dir shares one, others get their own", "[unit]") {
  CHECK(CgroupOwnerFor("") == "mcp-sandbox");
  CHECK(CgroupOwnerFor("/var/lib/mcp-sandbox") == "mcp-sandbox");
  CHECK(CgroupOwnerFor("/var/lib/mcp-sandbox/") == "mcp-sandbox");
  std::string a = CgroupOwnerFor("/tmp/state-a");
  CHECK(a.rfind("mcp-sandbox-", 0) == 0);
  CHECK(a.size() == std::string("mcp-sandbox-").size() + 12);
  CHECK(a == CgroupOwnerFor("/tmp/state-a/"));  // the same dir, the same parent, every time
  CHECK(a != CgroupOwnerFor("/tmp/state-b"));
}

TEST_CASE("a server's sweep leaves the live sessions of a server with another state dir alone",
          "[sandbox]") {
  std::string rootfs = testing::TestRootfs();
  std::string agent = testing::TestAgentDir();
  testing::TempDir dir_a;
  testing::TempDir dir_b;
  BackendOptions options;
  options.kind = BackendKind::kNamespace;
  options.agent_dir = agent;
  options.state_dir = dir_a.Join("state");
  auto first = MakeBackend(options);
  if (!first) testing::SkipTest("no namespace backend here: " + first.error().message);
  auto& backend_a = static_cast<NamespaceBackend&>(*first->backend);
  auto box = testing::StartAgent(backend_a, testing::MakeSpec(rootfs, agent));
  REQUIRE(box.Python("x = 42").exit_code == 0);

  options.state_dir = dir_b.Join("state");
  auto second = MakeBackend(options);
  REQUIRE(second);
  REQUIRE(second->backend->SweepOrphans());  // as a server does when it starts

  auto after = box.Python("print(x)");
  CHECK(after.exit_code == 0);
  CHECK(after.stdout_text == "42\n");
}

}  // namespace
}  // namespace sandbox
