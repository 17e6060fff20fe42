// The one mapping from the parsed configuration to what `serve` and `run` start (issue #24):
// each setting reaches the session manager, the backend, the tools and the transports it
// names, and `run` narrows it to one session without losing the limits.
#include "tools/cli/configured_options.h"

#include <catch2/catch.hpp>

namespace configured_options_test {

using namespace sandbox;
using namespace sandbox::cli;
using namespace std::chrono_literals;

namespace {

// The options a configuration made of `env` alone yields.
ConfiguredOptions OptionsOf(std::map<std::string, std::string> env) {
  auto config = cli::LoadServeConfig(
      [env = std::move(env)](const std::string& name) -> std::optional<std::string> {
        auto it = env.find(name);
        if (it == env.end()) return std::nullopt;
        return it->second;
      },
      {});
  REQUIRE(config);
  auto options = ConfiguredOptionsFor(*config);
  REQUIRE(options);
  return std::move(*options);
}

}  // namespace

TEST_CASE("configured options: every setting reaches the part it configures", "[unit]") {
  auto options = OptionsOf({{"SANDBOX_STATE_DIR", "/srv/sandbox"},
                            {"SANDBOX_IMAGE", "python-small"},
                            {"SANDBOX_MEMORY_LIMIT", "1g"},
                            {"SANDBOX_EXEC_TIMEOUT_S", "90"},
                            {"SANDBOX_SESSION_TTL_M", "5"},
                            {"SANDBOX_MAX_SESSIONS", "20"},
                            {"SANDBOX_POOL_SIZE", "0"},
                            {"SANDBOX_MAX_UPLOAD_BYTES", "3m"},
                            {"SANDBOX_MAX_RESULT_BYTES", "2m"},
                            {"SANDBOX_BACKEND", "docker"},
                            {"SANDBOX_REPLICA_ID", "r7"},
                            {"SANDBOX_HTTP_HOST", "0.0.0.0"},
                            {"SANDBOX_HTTP_PORT", "9000"},
                            {"SANDBOX_HTTP_HEADER_TIMEOUT_S", "2.5"},
                            {"SANDBOX_HTTP_MAX_TRANSPORT_SESSIONS", "7"},
                            {"SANDBOX_OAUTH_ISSUER", "https://id.example.com"},
                            {"SANDBOX_SUBJECT_MAX_SESSIONS", "3"},
                            {"SANDBOX_SUBJECT_MAX_SAVED", "4"},
                            {"SANDBOX_SUBJECT_SAVED_BYTES", "2g"}});
  const SessionConfig& session = options.session;
  CHECK(session.state_dir == "/srv/sandbox");
  CHECK(session.default_image == "python-small");
  CHECK(session.limits.memory_bytes == 1ull << 30);
  CHECK(session.exec_timeout_s == 90);
  CHECK(session.ttl == 5min);
  CHECK(session.hibernate_after == 5min);  // hibernation follows the idle time-out by default
  CHECK(session.max_sessions == 20);
  CHECK(session.max_upload_bytes == 3ull << 20);
  CHECK(session.replica_id == "r7");
  CHECK(session.subject_quota.max_sessions == 3);
  CHECK(session.subject_quota.saved.max_saved == 4);
  CHECK(session.subject_quota.saved.max_bytes == 2ull << 30);
  CHECK_FALSE(session.agent_dir.empty());

  CHECK(options.backend.kind == BackendKind::kDocker);
  CHECK(options.backend.state_dir == session.state_dir);
  CHECK(options.backend.agent_dir == session.agent_dir);
  CHECK(options.backend.max_sessions == 20);
  CHECK(options.backend.replica == "r7");

  CHECK(options.tools.exec_timeout_s == 90);
  CHECK(options.tools.max_upload_bytes == 3ull << 20);
  CHECK(options.tools.max_result_bytes == 2ull << 20);
  CHECK(options.server.worker_threads == 28);

  const mcp::HttpOptions& http = options.http;
  CHECK(http.host == "0.0.0.0");
  CHECK(http.port == 9000);
  CHECK(http.header_timeout == 2500ms);
  CHECK(http.session_idle_ttl == 5min);
  CHECK(http.max_mcp_sessions == 7);
  CHECK(http.replica_id == "r7");
  CHECK(http.oauth.issuer == "https://id.example.com");
  CHECK(http.threads == 20 * 4 + 32);
  // An upload travels base64-encoded in one message: both transports take the same size.
  CHECK(http.max_body_bytes == (3u << 20) / 3 * 4 + (4u << 20));
  CHECK(options.stdio.max_line_bytes == http.max_body_bytes);
}

TEST_CASE("configured options: the warm pool adds to the backend's budget, preload needs a pool",
          "[unit]") {
  auto pooled = OptionsOf({{"SANDBOX_MAX_SESSIONS", "10"},
                           {"SANDBOX_POOL_SIZE", "3"},
                           {"SANDBOX_POOL_PRELOAD", "numpy"}});
  CHECK(pooled.session.pool_size == 3);
  CHECK(pooled.session.preload == "numpy");
  CHECK(pooled.backend.max_sessions == 13);

  auto unpooled = OptionsOf({{"SANDBOX_POOL_SIZE", "0"}, {"SANDBOX_POOL_PRELOAD", "numpy"}});
  CHECK(unpooled.session.pool_size == 0);
  CHECK(unpooled.session.preload.empty());
}

TEST_CASE("configured options: egress is off unless allowed, and the allowlist is parsed",
          "[unit]") {
  CHECK(OptionsOf({}).session.egress.allow.empty());
  auto allowed = OptionsOf({{"SANDBOX_EGRESS_ALLOW", "pypi.org"}});
  CHECK_FALSE(allowed.session.egress.allow.empty());
}

TEST_CASE("configured options: run narrows them to one session and keeps the limits", "[unit]") {
  auto options = OptionsOf({{"SANDBOX_MAX_SESSIONS", "10"},
                            {"SANDBOX_POOL_SIZE", "2"},
                            {"SANDBOX_POOL_PRELOAD", "numpy"},
                            {"SANDBOX_MEMORY_LIMIT", "256m"},
                            {"SANDBOX_EXEC_TIMEOUT_S", "30"}});
  NarrowToOneRun(options);
  CHECK(options.session.max_sessions == 1);
  CHECK(options.session.pool_size == 0);
  CHECK(options.session.preload.empty());
  CHECK(options.session.hibernate_after == 0ms);
  CHECK(options.session.max_output_bytes == 16ull << 20);
  CHECK(options.session.limits.memory_bytes == 256ull << 20);
  CHECK(options.session.exec_timeout_s == 30);
  CHECK(options.backend.max_sessions == 12);  // the budget is shared as the server would
}

}  // namespace configured_options_test
