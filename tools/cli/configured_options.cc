#include "tools/cli/configured_options.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <utility>

#include "rootfs/store.h"
#include "tools/cli/wiring.h"

namespace sandbox::cli {

namespace {

std::chrono::milliseconds Millis(double seconds) {
  return std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
}

}  // namespace

Result<ConfiguredOptions> ConfiguredOptionsFor(const ServeConfig& config) {
  ConfiguredOptions options;

  SessionConfig& session = options.session;
  session.state_dir =
      config.state_dir.empty() ? rootfs::ImageStore::DefaultStateDir() : config.state_dir;
  session.default_image = config.image;
  session.agent_dir = DefaultAgentDir();
  session.wheelhouse = config.wheelhouse;
  session.limits = SessionLimits(config);
  session.exec_timeout_s = config.exec_timeout_s;
  session.ttl = std::chrono::minutes(config.session_ttl_m);
  session.hibernate_after = HibernateAfter(config);
  session.saved_max_bytes = config.saved_max_bytes;
  session.saved_ttl = std::chrono::seconds(config.saved_ttl_s);
  session.max_sessions = config.max_sessions;
  session.max_output_bytes = config.max_output_bytes;
  session.max_code_bytes = config.max_code_bytes;
  session.max_upload_bytes = config.max_upload_bytes;
  session.pool_size = config.pool_size;
  session.preload = config.pool_size > 0 ? config.pool_preload : std::string();
  session.replica_id = config.replica_id;
  session.measure_calls = config.usage;
  session.subject_quota = {
      .max_sessions = config.subject_max_sessions,
      .max_memory_bytes = config.subject_max_memory_bytes,
      .max_cpus = config.subject_max_cpus,
      .saved = {.max_saved = config.subject_max_saved, .max_bytes = config.subject_saved_bytes}};
  SBX_ASSIGN_OR_RETURN(session.egress, EgressConfigFor(config));

  BackendOptions& backend = options.backend;
  backend.kind = *ParseBackendKind(config.backend);  // validated by the config
  backend.state_dir = session.state_dir;
  backend.agent_dir = session.agent_dir;
  // Pooled sandboxes exist next to the sessions: the backend shares its budgets among both.
  backend.max_sessions = config.max_sessions + config.pool_size;
  backend.replica = config.replica_id;
  backend.runsc = config.runsc;
  backend.gvisor_platform = config.gvisor_platform;
  backend.docker_runtime = config.docker_runtime;

  options.tools.exec_timeout_s = config.exec_timeout_s;
  options.tools.max_upload_bytes = config.max_upload_bytes;
  options.tools.max_code_bytes = config.max_code_bytes;
  options.tools.max_output_bytes = config.max_output_bytes;
  options.tools.max_result_bytes = config.max_result_bytes;

  options.server.worker_threads = static_cast<size_t>(config.max_sessions) + 8;

  // An upload travels base64-encoded (4/3 of its size) inside one JSON-RPC message, with room
  // for the rest of the message.
  const auto max_message_bytes = static_cast<size_t>(config.max_upload_bytes / 3 * 4 + (4u << 20));
  options.stdio.max_line_bytes = max_message_bytes;

  mcp::HttpOptions& http = options.http;
  http.host = config.http_host;
  http.port = config.http_port;
  http.auth_tokens = config.auth_tokens;
  http.auth_token_names = config.auth_token_names;
  http.oauth = {.issuer = config.oauth_issuer,
                .resource = config.oauth_resource,
                .scopes = config.oauth_scopes,
                .jwks_min_refresh = Millis(config.oauth_jwks_refresh_s),
                .quota_claim = config.oauth_quota_claim,
                .allow_http_issuer = config.oauth_allow_http_issuer};
  http.allowed_origins = config.allowed_origins;
  http.max_body_bytes = max_message_bytes;
  // Threads for requests being worked on (idle connections hold none): several per session.
  http.threads = std::max<size_t>(64, static_cast<size_t>(config.max_sessions) * 4 + 32);
  http.session_idle_ttl = std::chrono::minutes(config.session_ttl_m);
  http.replica_id = config.replica_id;
  http.public_url = config.public_url;
  http.download_ttl = std::chrono::seconds(config.download_ttl_s);
  http.max_connections = static_cast<size_t>(config.http_max_connections);
  http.max_connections_per_peer = static_cast<size_t>(config.http_max_connections_per_peer);
  http.max_mcp_sessions = static_cast<size_t>(config.http_max_transport_sessions);
  http.header_timeout = Millis(config.http_header_timeout_s);
  http.keep_alive_timeout = Millis(config.http_idle_timeout_s);
  http.body_timeout = Millis(config.http_body_timeout_s);
  return options;
}

void NarrowToOneRun(ConfiguredOptions& options) {
  options.session.max_sessions = 1;
  options.session.pool_size = 0;
  options.session.preload.clear();
  options.session.hibernate_after = std::chrono::milliseconds(0);
  options.session.max_output_bytes = 16ull << 20;
}

}  // namespace sandbox::cli
