#include "runtime/gvisor/oci_spec.h"

#include <sys/resource.h>

#include <algorithm>

#include <catch2/catch.hpp>

#include "runtime/sandbox_layout.h"

namespace oci_spec_test {

using sandbox::gvisor::OciInputs;
using sandbox::gvisor::OciSpecFor;

namespace {

OciInputs Inputs() {
  OciInputs inputs;
  inputs.rootfs = "/images/x/rootfs";
  inputs.agent_dir = "/opt/agent";
  inputs.argv = {"/.sandbox/sandbox-init"};
  inputs.env = {"PATH=/usr/bin"};
  return inputs;
}

const nlohmann::json* MountAt(const nlohmann::json& spec, const std::string& target) {
  for (const auto& mount : spec["mounts"]) {
    if (mount["destination"] == target) return &mount;
  }
  return nullptr;
}

}  // namespace

TEST_CASE("the OCI spec: read-only root, the sandbox user, no capabilities, no_new_privs",
          "[unit]") {
  nlohmann::json spec = OciSpecFor(Inputs());
  CHECK(spec["root"]["path"] == "/images/x/rootfs");
  CHECK(spec["root"]["readonly"] == true);
  CHECK(spec["process"]["user"]["uid"] == sandbox::layout::kSandboxUid);
  CHECK(spec["process"]["user"]["gid"] == sandbox::layout::kSandboxGid);
  CHECK(spec["process"]["cwd"] == "/mnt/data");
  CHECK(spec["process"]["noNewPrivileges"] == true);
  for (const char* set : {"bounding", "effective", "inheritable", "permitted", "ambient"}) {
    CHECK(spec["process"]["capabilities"][set].empty());
  }
  CHECK(spec["process"]["args"] == nlohmann::json({"/.sandbox/sandbox-init"}));
  // No "user" namespace: runsc makes its own (--rootless), and a network one without a device.
  std::vector<std::string> kinds;
  for (const auto& ns : spec["linux"]["namespaces"]) kinds.push_back(ns["type"]);
  CHECK(kinds == std::vector<std::string>{"pid", "network", "ipc", "uts", "mount"});
}

TEST_CASE("the OCI spec: tmpfs sizes from the limits, one option per entry, read-only binds",
          "[unit]") {
  OciInputs inputs = Inputs();
  inputs.limits.disk_bytes = 100ull << 20;
  inputs.limits.tmp_bytes = 30ull << 20;
  inputs.wheelhouse = "/srv/wheels";
  nlohmann::json spec = OciSpecFor(inputs);
  const nlohmann::json* data = MountAt(spec, "/mnt/data");
  REQUIRE(data != nullptr);
  CHECK((*data)["type"] == "tmpfs");
  // runsc refuses "mode=0755,uid=1000,gid=1000" as one option (it did, before they were split).
  CHECK((*data)["options"] ==
        nlohmann::json({"nosuid", "nodev", "size=104857600", "mode=0755", "uid=1000", "gid=1000"}));
  const nlohmann::json* tmp = MountAt(spec, "/tmp");
  REQUIRE(tmp != nullptr);
  CHECK((*tmp)["options"] == nlohmann::json({"nosuid", "nodev", "size=31457280", "mode=1777"}));
  REQUIRE(MountAt(spec, "/dev/shm") != nullptr);
  const nlohmann::json* agent = MountAt(spec, "/.sandbox");
  REQUIRE(agent != nullptr);
  CHECK((*agent)["source"] == "/opt/agent");
  CHECK((*agent)["options"][1] == "ro");
  const nlohmann::json* wheels = MountAt(spec, "/mnt/wheelhouse");
  REQUIRE(wheels != nullptr);
  CHECK((*wheels)["options"][1] == "ro");
  CHECK(MountAt(OciSpecFor(Inputs()), "/mnt/wheelhouse") == nullptr);
}

TEST_CASE("the OCI spec: the Sentry's rlimits include NPROC (the pids limit) and AS", "[unit]") {
  OciInputs inputs = Inputs();
  inputs.limits.pids = 77;
  inputs.limits.memory_bytes = 300ull << 20;
  inputs.limits.open_files = 555;
  nlohmann::json spec = OciSpecFor(inputs);
  std::map<std::string, uint64_t> hard;
  for (const auto& r : spec["process"]["rlimits"]) hard[r["type"]] = r["hard"];
  CHECK(hard["RLIMIT_NPROC"] == 77);
  CHECK(hard["RLIMIT_AS"] == (300ull << 20));
  CHECK(hard["RLIMIT_NOFILE"] == 555);
  CHECK(hard["RLIMIT_CORE"] == 0);
  CHECK(hard.count("RLIMIT_FSIZE") == 1);
}

TEST_CASE(
    "the OCI spec: with egress, the bridge's directory and the variable that names its "
    "socket, and nothing of it without",
    "[unit]") {
  OciInputs inputs = Inputs();
  inputs.egress_dir = "/state/gvisor/bundles/sess_1/egress";
  nlohmann::json spec = OciSpecFor(inputs);
  const nlohmann::json* egress = MountAt(spec, sandbox::layout::kGvisorEgressDir);
  REQUIRE(egress != nullptr);
  CHECK((*egress)["source"] == "/state/gvisor/bundles/sess_1/egress");
  CHECK((*egress)["options"][1] == "ro");
  CHECK(spec["process"]["env"] ==
        nlohmann::json(
            {"PATH=/usr/bin", "SANDBOX_AGENT_EGRESS_CONNECT=/dev/.sandbox-egress/proxy.sock"}));
  auto points = sandbox::gvisor::MountPointsIn(inputs);
  CHECK(std::find(points.begin(), points.end(), "dev/.sandbox-egress") != points.end());

  nlohmann::json sealed = OciSpecFor(Inputs());
  CHECK(MountAt(sealed, sandbox::layout::kGvisorEgressDir) == nullptr);
  CHECK(sealed["process"]["env"] == nlohmann::json({"PATH=/usr/bin"}));
}

}  // namespace oci_spec_test
