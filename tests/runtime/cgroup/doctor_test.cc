// `mcp-sandbox doctor`: the --json object's fields and the exit codes (0 a backend is usable,
// 1 none is, 2 usage or a SANDBOX_* value serve would refuse). Runs the built binary.
// SANDBOX_CGROUP=none keeps it from creating the real parent cgroup on this host; the cgroup modes
// themselves are tested in cgroup_tests.
#include <unistd.h>

#include <string>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "tests/support/test_support.h"

namespace sandbox {
namespace {

struct Run {
  int code;
  std::string out;
};

Run Doctor(const std::string& env, const std::string& args) {
  Run run;
  run.code =
      testing::RunShell(env + " " MCP_SANDBOX_BINARY " doctor " + args + " 2>/dev/null", &run.out);
  return run;
}

TEST_CASE("doctor --json reports every probe", "[doctor]") {
  Run run = Doctor("SANDBOX_CGROUP=none SANDBOX_BACKEND=auto", "--json");
  INFO(run.out);
  auto report = nlohmann::json::parse(run.out);
  for (const char* key : {"kernel", "uid", "user_namespaces", "seccomp", "cgroup", "docker",
                          "backend", "state_dir", "limits", "limits_mode", "config_errors"}) {
    CHECK(report.contains(key));
  }
  CHECK(report["user_namespaces"]["ok"].is_boolean());
  CHECK(report["user_namespaces"].contains("failed_step"));
  CHECK(report["user_namespaces"].contains("errno"));
  CHECK(report["user_namespaces"]["sysctls"].contains("user.max_user_namespaces"));
  CHECK(report["seccomp"]["ok"].is_boolean());
  CHECK(report["cgroup"]["mode"] == "none");
  CHECK(report["cgroup"]["reason"] == "SANDBOX_CGROUP=none: rlimits only");
  CHECK(report["docker"].contains("reachable"));
  CHECK(report["docker"].contains("api_version"));
  CHECK(report["backend"]["requested"] == "auto");
  REQUIRE(report["limits"].is_array());
  bool memory = false;
  for (const auto& limit : report["limits"]) {
    for (const char* key : {"name", "mechanism", "value", "note"}) CHECK(limit.contains(key));
    if (limit["name"] == "memory") {
      memory = true;
      CHECK(limit["mechanism"] == "rlimit");  // no cgroup: RLIMIT_AS, with its caveat
      CHECK(limit["value"] == "512MiB");
    }
  }
  CHECK(memory);
  CHECK(report["config_errors"] == nlohmann::json::array());
  // Exit 0 exactly when a backend is usable.
  bool usable = report["backend"]["usable"].get<bool>();
  CHECK(usable == (report["backend"]["name"] != "none"));
  CHECK(run.code == (usable ? 0 : 1));
}

TEST_CASE("doctor exits 1 when the forced backend is unusable", "[doctor]") {
  Run run = Doctor(
      "SANDBOX_CGROUP=none SANDBOX_BACKEND=docker DOCKER_HOST=unix:///nonexistent.sock", "--json");
  INFO(run.out);
  CHECK(run.code == 1);
  auto report = nlohmann::json::parse(run.out);
  CHECK(report["backend"]["name"] == "none");
  CHECK(report["backend"]["usable"] == false);
  CHECK(report["docker"]["reachable"] == false);
  CHECK(report["docker"]["endpoint"] == "/nonexistent.sock");
  CHECK(report["backend"]["reason"].get<std::string>().find("SANDBOX_BACKEND=docker") !=
        std::string::npos);

  // Not a backend: serve refuses it (exit 2), and so does doctor, after its report.
  Run bogus = Doctor("SANDBOX_CGROUP=none SANDBOX_BACKEND=bogus", "--json");
  CHECK(bogus.code == 2);
  auto bogus_report = nlohmann::json::parse(bogus.out);
  REQUIRE(bogus_report["config_errors"].size() == 1);
  CHECK(bogus_report["config_errors"][0].get<std::string>().rfind("SANDBOX_BACKEND='bogus': ", 0) ==
        0);
}

TEST_CASE("doctor says whether gVisor is usable, and why not", "[doctor]") {
  Run missing = Doctor(
      "SANDBOX_CGROUP=none SANDBOX_BACKEND=gvisor SANDBOX_RUNSC=/nonexistent/runsc", "--json");
  INFO(missing.out);
  CHECK(missing.code == 1);
  auto report = nlohmann::json::parse(missing.out);
  CHECK(report["gvisor"]["ok"] == false);
  CHECK(report["backend"]["name"] == "none");
  CHECK(report["backend"]["reason"].get<std::string>().find("/nonexistent/runsc") !=
        std::string::npos);
  Run systrap = Doctor("SANDBOX_CGROUP=none SANDBOX_GVISOR_PLATFORM=systrap", "--json");
  auto with_systrap = nlohmann::json::parse(systrap.out);
  if (with_systrap["gvisor"]["detail"].get<std::string>().find("no 'runsc'") != std::string::npos) {
    return;  // the rest needs runsc (tools/test installs it)
  }
  // Debian 12's runsc predates systrap; a newer one takes it.
  const std::string detail = with_systrap["gvisor"]["detail"];
  CHECK((with_systrap["gvisor"]["ok"] == true || detail.find("predates") != std::string::npos));
  Run usable = Doctor("SANDBOX_CGROUP=none SANDBOX_BACKEND=gvisor", "--json");
  auto chosen = nlohmann::json::parse(usable.out);
  CHECK(chosen["backend"]["name"] == "gvisor");
  for (const auto& limit : chosen["limits"]) {
    if (limit["name"] == "pids") CHECK(limit["note"] == "RLIMIT_NPROC in the Sentry");
  }
}

TEST_CASE("doctor: limits from the environment, usage errors exit 2", "[doctor]") {
  Run sized = Doctor("SANDBOX_CGROUP=none SANDBOX_MEMORY_LIMIT=1g SANDBOX_PIDS_LIMIT=64", "--json");
  auto report = nlohmann::json::parse(sized.out);
  for (const auto& limit : report["limits"]) {
    if (limit["name"] == "memory") CHECK(limit["value"] == "1GiB");
  }
  Run lots = Doctor("SANDBOX_CGROUP=none SANDBOX_MEMORY_LIMIT=lots", "--json");
  CHECK(lots.code == 2);
  CHECK(nlohmann::json::parse(lots.out)["config_errors"].size() == 1);
  CHECK(Doctor("SANDBOX_CGROUP=none", "--bogus").code == 2);
  CHECK(Doctor("SANDBOX_CGROUP=none", "extra").code == 2);
  Run help = Doctor("", "--help");
  CHECK(help.code == 0);
  CHECK(help.out.find("example") != std::string::npos);
}

TEST_CASE("doctor: the egress policy, with and without SANDBOX_EGRESS_ALLOW", "[doctor]") {
  // The same object and line as sandbox_session_status and `run --json` (egress_report.h).
  auto sealed = nlohmann::json::parse(Doctor("SANDBOX_CGROUP=none", "--json").out);
  CHECK(sealed["egress"] == nlohmann::json{{"enabled", false}});
  CHECK(Doctor("SANDBOX_CGROUP=none", "").out.find("egress: none (no network)") !=
        std::string::npos);
  const std::string allow = "SANDBOX_CGROUP=none SANDBOX_EGRESS_ALLOW=pypi.org,example.com:8443";
  auto open = nlohmann::json::parse(Doctor(allow, "--json").out);
  INFO(open["egress"].dump());
  CHECK(open["egress"]["enabled"] == true);
  CHECK(open["egress"]["allow"].size() >= 2);
  CHECK(open["egress"].contains("max_bytes"));
  CHECK_FALSE(open["egress"].contains("bytes"));  // a policy alone carried nothing
  std::string text = Doctor(allow, "").out;
  CHECK(text.find("egress: pypi.org") != std::string::npos);
  CHECK(text.find("no network") == std::string::npos);
}

TEST_CASE("doctor: human table", "[doctor]") {
  Run run = Doctor("SANDBOX_CGROUP=none", "");
  INFO(run.out);
  for (const char* row :
       {"user namespaces", "seccomp", "cgroups", "docker", "backend", "memory", "open_files"}) {
    CHECK(run.out.find(row) != std::string::npos);
  }
}

TEST_CASE("doctor as an unprivileged user", "[doctor]") {
  if (::geteuid() != 0) testing::SkipTest("needs root to drop to uid 65534 with setpriv");
  std::string out;
  int code =
      testing::RunShell("setpriv --reuid=65534 --regid=65534 --clear-groups " MCP_SANDBOX_BINARY
                        " doctor --json 2>/dev/null",
                        &out);
  INFO(out);
  auto report = nlohmann::json::parse(out);
  CHECK(report["uid"] == 65534);
  // No delegated cgroup for uid 65534 here: rlimits, with the reason.
  if (report["cgroup"]["mode"] == "none") {
    CHECK(report["cgroup"]["reason"].get<std::string>().find("cgroup v1 needs root") !=
          std::string::npos);
  }
  CHECK(code == (report["backend"]["usable"].get<bool>() ? 0 : 1));
}

}  // namespace
}  // namespace sandbox
