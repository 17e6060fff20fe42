#include "runtime/docker/container_spec.h"

#include <catch2/catch.hpp>

namespace container_spec_test {

using nlohmann::json;
using namespace sandbox::docker;

namespace {

sandbox::SandboxSpec Spec() {
  sandbox::SandboxSpec spec;
  spec.session_id = "sess_0123456789ab";
  spec.image_name = "python";
  spec.env = {"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/mnt/data"};
  spec.agent_dir = "/opt/mcp-sandbox/agent";
  spec.limits.memory_bytes = 256ull << 20;
  spec.limits.cpus = 1.5;
  spec.limits.pids = 128;
  spec.limits.disk_bytes = 100ull << 20;
  spec.limits.tmp_bytes = 64ull << 20;
  spec.limits.open_files = 512;
  spec.limits.file_size_bytes = 10ull << 20;
  return spec;
}

}  // namespace

TEST_CASE("the container spec names the session and runs the agent", "[unit]") {
  auto spec =
      ContainerSpecFor(Spec(), "mcp-sandbox/python:latest", {"mid/host", "boot/ns/1/2", ""}, "{}");
  REQUIRE(spec);
  CHECK(spec->name == "mcp-sandbox-sess_0123456789ab");
  CHECK(spec->image == "mcp-sandbox/python:latest");
  CHECK(spec->command == std::vector<std::string>{"/.sandbox/sandbox-init"});
  CHECK(spec->working_dir == "/mnt/data");
  CHECK(spec->labels.at("mcp-sandbox.session") == "sess_0123456789ab");
  CHECK(spec->labels.at("mcp-sandbox.owner") == "boot/ns/1/2");
  CHECK(spec->labels.at("mcp-sandbox.host") == "mid/host");
  CHECK(spec->labels.at("mcp-sandbox.image") == "python");
  CHECK(spec->labels.count("mcp-sandbox.replica") == 0);  // a single host: no replica label
  auto replica = ContainerSpecFor(Spec(), "img", {"mid/host", "boot/ns/1/2", "r2"}, "{}");
  REQUIRE(replica);
  CHECK(replica->labels.at("mcp-sandbox.replica") == "r2");
  REQUIRE(spec->binds.size() == 1);
  CHECK(spec->binds[0].source == "/opt/mcp-sandbox/agent");
  CHECK(spec->binds[0].target == "/.sandbox");
  CHECK(spec->binds[0].read_only);

  auto with_wheels = Spec();
  with_wheels.wheelhouse = "/srv/wheels";
  auto spec2 = ContainerSpecFor(with_wheels, "img", {"h", "o", ""}, "");
  REQUIRE(spec2);
  REQUIRE(spec2->binds.size() == 2);
  CHECK(spec2->binds[1].target == "/mnt/wheelhouse");
  CHECK(spec2->binds[1].read_only);
}

TEST_CASE("an egress socket is bound in and named to sandbox-init", "[unit]") {
  auto with_egress = Spec();
  with_egress.egress_socket_path = "/var/lib/mcp-sandbox/egress/sess_0123456789ab.sock";
  auto spec = ContainerSpecFor(with_egress, "img", {"h", "o", ""}, "");
  REQUIRE(spec);
  REQUIRE(spec->binds.size() == 2);
  CHECK(spec->binds[1].source == with_egress.egress_socket_path);
  CHECK(spec->binds[1].target == "/run/sandbox-egress.sock");
  CHECK(spec->binds[1].read_only);
  CHECK(spec->env.back() == "SANDBOX_AGENT_EGRESS_SOCKET=/run/sandbox-egress.sock");
  // Still no network of its own: the socket is the only way out.
  json body = CreateContainerBody(*spec);
  CHECK(body["HostConfig"]["NetworkMode"] == "none");
  CHECK(body["NetworkDisabled"] == true);

  auto none = ContainerSpecFor(Spec(), "img", {"h", "o", ""}, "");
  REQUIRE(none);
  for (const std::string& entry : none->env) CHECK_FALSE(entry.starts_with("SANDBOX_AGENT_EGRESS"));

  with_egress.egress_socket_path = "egress.sock";
  CHECK(ContainerSpecFor(with_egress, "img", {"h", "o", ""}, "").error().code ==
        sandbox::ErrorCode::kInvalidArgument);
}

TEST_CASE("the create body carries every hardening setting", "[unit]") {
  auto spec =
      ContainerSpecFor(Spec(), "img", {"h", "owner", ""}, R"({"defaultAction":"SCMP_ACT_ERRNO"})");
  REQUIRE(spec);
  json body = CreateContainerBody(*spec);
  CHECK(body["Image"] == "img");
  CHECK(body["Entrypoint"] == json::array({"/.sandbox/sandbox-init"}));
  CHECK(body["Cmd"] == json::array());
  CHECK(body["User"] == "1000:1000");
  CHECK(body["Tty"] == false);
  CHECK(body["OpenStdin"] == true);
  CHECK(body["AttachStdin"] == true);
  CHECK(body["AttachStdout"] == true);
  CHECK(body["AttachStderr"] == true);
  CHECK(body["NetworkDisabled"] == true);
  CHECK(body["WorkingDir"] == "/mnt/data");
  CHECK(body["Env"].size() == 2);
  CHECK(body["Labels"]["mcp-sandbox.session"] == "sess_0123456789ab");

  const json& host = body["HostConfig"];
  CHECK(host["NetworkMode"] == "none");
  CHECK(host["CapDrop"] == json::array({"ALL"}));
  CHECK(host["CapAdd"] == json::array());
  CHECK(host["Privileged"] == false);
  CHECK(host["ReadonlyRootfs"] == true);
  CHECK(host["SecurityOpt"] ==
        json::array({"no-new-privileges:true", R"(seccomp={"defaultAction":"SCMP_ACT_ERRNO"})"}));
  CHECK(host["Memory"] == 256ull << 20);
  CHECK(host["MemorySwap"] == 256ull << 20);  // = Memory: no swap
  CHECK(host["NanoCpus"] == 1'500'000'000);
  CHECK(host["CpuShares"] == 1024);  // said, not left to the daemon: a claim raises to this
  CHECK(host["PidsLimit"] == 128);
  CHECK(host["Ulimits"] ==
        json::array({{{"Name", "core"}, {"Soft", 0}, {"Hard", 0}},
                     {{"Name", "nofile"}, {"Soft", 512}, {"Hard", 512}},
                     {{"Name", "fsize"}, {"Soft", 10ull << 20}, {"Hard", 10ull << 20}},
                     {{"Name", "sigpending"}, {"Soft", 1024}, {"Hard", 1024}},
                     {{"Name", "msgqueue"}, {"Soft", 819200}, {"Hard", 819200}}}));
  CHECK(host["Tmpfs"]["/tmp"] == "rw,exec,nosuid,nodev,size=67108864,mode=1777");
  CHECK(host["Tmpfs"]["/mnt/data"] ==
        "rw,exec,nosuid,nodev,size=104857600,mode=0755,uid=1000,gid=1000");
  CHECK(host["Init"] == false);  // sandbox-init is pid 1: kill(-1, 9) cannot reach it
  CHECK(host["IpcMode"] == "private");
  CHECK(host["CgroupnsMode"] == "private");
  CHECK(host["AutoRemove"] == false);
  REQUIRE(host["Mounts"].size() == 1);
  CHECK(host["Mounts"][0]["Type"] == "bind");
  CHECK(host["Mounts"][0]["Source"] == "/opt/mcp-sandbox/agent");
  CHECK(host["Mounts"][0]["Target"] == "/.sandbox");
  CHECK(host["Mounts"][0]["ReadOnly"] == true);
}

TEST_CASE("without a profile the daemon's default seccomp profile stays on", "[unit]") {
  auto spec = ContainerSpecFor(Spec(), "img", {"h", "owner", ""}, "");
  REQUIRE(spec);
  json host = CreateContainerBody(*spec)["HostConfig"];
  CHECK(host["SecurityOpt"] == json::array({"no-new-privileges:true"}));
  spec->limits.cpus = 0;
  CHECK_FALSE(CreateContainerBody(*spec)["HostConfig"].contains("NanoCpus"));
}

TEST_CASE("the runtime is the daemon's default unless one is named", "[unit]") {
  auto spec = ContainerSpecFor(Spec(), "img", {"h", "owner", ""}, "");
  REQUIRE(spec);
  CHECK_FALSE(CreateContainerBody(*spec)["HostConfig"].contains("Runtime"));
  spec->runtime = "runsc";
  json host = CreateContainerBody(*spec)["HostConfig"];
  CHECK(host["Runtime"] == "runsc");
  // The cgroup holds the Sentry too: room beside the guest, whose own limits are the Sentry's
  // rlimits (a greedy cell fails, the sandbox lives on).
  CHECK(host["Memory"] == (256ull + 64) << 20);
  CHECK(host["MemorySwap"] == (256ull + 64) << 20);
  CHECK(host["PidsLimit"] == 4096);
  CHECK(host["Ulimits"].back() == json({{"Name", "nproc"}, {"Soft", 128}, {"Hard", 128}}));
  CHECK(host["Ulimits"][host["Ulimits"].size() - 2] ==
        json({{"Name", "as"}, {"Soft", 256ull << 20}, {"Hard", 256ull << 20}}));
}

TEST_CASE("a background sandbox keeps the default CPU shares (it is capped, not lowered)",
          "[unit]") {
  // Issue #38: a low weight leaves CFS a debt that delays the raised container.
  sandbox::SandboxSpec background = Spec();
  background.cpu_priority = sandbox::CpuPriority::kBackground;
  auto spec = ContainerSpecFor(background, "img", {"h", "owner", ""}, "");
  REQUIRE(spec);
  CHECK(CreateContainerBody(*spec)["HostConfig"]["CpuShares"] == 1024);
  CHECK(CpuSharesFor(sandbox::CpuPriority::kBackground) == 1024);
  CHECK(CpuSharesFor(sandbox::CpuPriority::kNormal) == 1024);
}

TEST_CASE("specs that cannot make a safe container are refused", "[unit]") {
  auto bad_id = Spec();
  bad_id.session_id = "../x";
  CHECK(ContainerSpecFor(bad_id, "img", {"h", "o", ""}, "").error().code ==
        sandbox::ErrorCode::kInvalidArgument);
  bad_id.session_id = "";
  CHECK_FALSE(ContainerSpecFor(bad_id, "img", {"h", "o", ""}, ""));
  // The longest session id (a 63-character replica id) names a container; longer does not.
  auto longest = Spec();
  longest.session_id = "sess_" + std::string(63, 'r') + "_" + std::string(32, 'a');
  REQUIRE(ContainerSpecFor(longest, "img", {"h", "o", ""}, ""));
  longest.session_id += "a";
  CHECK_FALSE(ContainerSpecFor(longest, "img", {"h", "o", ""}, ""));
  auto relative = Spec();
  relative.agent_dir = "agent";
  CHECK_FALSE(ContainerSpecFor(relative, "img", {"h", "o", ""}, ""));
  auto wheels = Spec();
  wheels.wheelhouse = "wheels";
  CHECK_FALSE(ContainerSpecFor(wheels, "img", {"h", "o", ""}, ""));
  CHECK_FALSE(ContainerSpecFor(Spec(), "", {"h", "o", ""}, ""));
}

}  // namespace container_spec_test
