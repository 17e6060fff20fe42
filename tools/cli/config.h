// The server's configuration: every SANDBOX_* environment variable, each also a `serve` flag
// (flags override the environment). One table (ConfigVariables) holds the name, flag, default
// and meaning of each, and docs/configuration.md's table is generated from it. Bad values
// are refused with a message naming the variable; nothing falls back silently.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "runtime/base/result.h"
#include "runtime/egress/egress_config.h"
#include "runtime/limits.h"

namespace sandbox::cli {

struct ServeConfig {
  std::string image;
  uint64_t memory_bytes = 0;
  double cpus = 0;
  uint32_t pids = 0;
  uint64_t disk_bytes = 0;
  double exec_timeout_s = 0;
  int session_ttl_m = 0;
  // Hibernation (docs/sessions.md "Hibernate, resume, fork"). hibernate_after_s: -1 = the idle
  // time-out (session_ttl_m), 0 = off (idle sessions are closed, nothing is saved).
  double hibernate_after_s = -1;
  uint64_t saved_max_bytes = 0;  // SANDBOX_SAVED_MAX_BYTES
  int64_t saved_ttl_s = 0;       // SANDBOX_SAVED_TTL
  int max_sessions = 0;
  int pool_size = 0;
  std::string pool_preload;
  uint64_t max_upload_bytes = 0;
  uint64_t max_output_bytes = 0;
  uint64_t max_code_bytes = 0;
  uint64_t max_result_bytes = 0;
  std::string http_host;
  int http_port = 0;
  std::vector<std::string> auth_tokens;       // empty = no authentication; any one admits
  std::vector<std::string> auth_token_names;  // per token: its holder's name ("" = unnamed)
  // SANDBOX_OAUTH_*: JWT access tokens from an authorization server (mcp/auth/).
  std::string oauth_issuer;               // "" = off
  bool oauth_allow_http_issuer = false;   // SANDBOX_OAUTH_ALLOW_HTTP_ISSUER
  std::string oauth_resource;             // "" = derived (SANDBOX_PUBLIC_URL + /mcp, or bound)
  std::vector<std::string> oauth_scopes;  // all required
  double oauth_jwks_refresh_s = 0;
  std::string oauth_quota_claim;  // "" = none (runtime/session/quota_claim.h)
  // SANDBOX_SUBJECT_*: what one named caller may hold (runtime/session/session_owner.h).
  int subject_max_sessions = 0;
  uint64_t subject_max_memory_bytes = 0;
  double subject_max_cpus = 0;
  int subject_max_saved = 0;                 // SANDBOX_SUBJECT_MAX_SAVED
  uint64_t subject_saved_bytes = 0;          // SANDBOX_SUBJECT_SAVED_BYTES (0 = the server's cap)
  std::vector<std::string> allowed_origins;  // empty = loopback origins on the bound port
  std::string log_level;
  std::string log_file;  // "" = stderr
  std::string log_format;
  std::string backend;            // auto | namespace | docker | gvisor
  std::string runsc;              // SANDBOX_RUNSC (gvisor)
  std::string gvisor_platform;    // SANDBOX_GVISOR_PLATFORM (gvisor)
  std::string docker_runtime;     // SANDBOX_DOCKER_RUNTIME (docker; "" = the daemon's default)
  std::string state_dir;          // "" = the image store's default
  std::string wheelhouse;         // "" = none
  std::string egress_allow;       // SANDBOX_EGRESS_ALLOW as given ("" = no network)
  uint64_t egress_max_bytes = 0;  // SANDBOX_EGRESS_MAX_BYTES
  std::string index_url;          // SANDBOX_INDEX_URL ("" = PyPI when allowed)
  // Running as one of several replicas behind a proxy (docs/scale-out.md "Replicas").
  std::string replica_id;      // SANDBOX_REPLICA_ID ("" = a single host)
  double drain_timeout_s = 0;  // SANDBOX_DRAIN_TIMEOUT_S (0 = the first signal stops at once)
  double drain_idle_s = 0;     // SANDBOX_DRAIN_IDLE_S
  std::string public_url;      // SANDBOX_PUBLIC_URL ("" = http:// + the request's Host)
  int64_t download_ttl_s = 0;  // SANDBOX_DOWNLOAD_TTL: how long a download link opens its file
  std::string metrics_addr;    // SANDBOX_METRICS_ADDR ("" = /metrics on the HTTP listener only)
  bool usage = true;           // SANDBOX_USAGE: per-call usage and metric counting
  // SANDBOX_HTTP_*: the HTTP transport's limits (mcp/http_transport.h HttpOptions).
  int http_max_connections = 0;
  int http_max_connections_per_peer = 0;
  int http_max_transport_sessions = 0;
  double http_header_timeout_s = 0;
  double http_idle_timeout_s = 0;
  double http_body_timeout_s = 0;
};

struct ConfigVariable {
  const char* env;            // SANDBOX_MEMORY_LIMIT
  const char* flag;           // --memory-limit
  const char* default_value;  // parsed like any value; "" = unset
  const char* meaning;        // one line for --help, docs/ and the man page
  Status (*apply)(ServeConfig& config, const std::string& value);
};

// Every variable, in the order docs/configuration.md lists them.
const std::vector<ConfigVariable>& ConfigVariables();

using EnvLookup = std::function<std::optional<std::string>(const std::string& name)>;
// The process environment.
std::optional<std::string> ProcessEnv(const std::string& name);

// Defaults, then the environment, then `flags` (flag name -> value). A bad value fails with
// kInvalidArgument: "SANDBOX_MEMORY_LIMIT='abc': not a size ...".
Result<ServeConfig> LoadServeConfig(const EnvLookup& env,
                                    const std::map<std::string, std::string>& flags);

// The same reading, for reports (`doctor`) that go on past a bad value: every bad value keeps
// its default in `config` and adds its message, worded as LoadServeConfig's error, to `errors`
// (in table order, so LoadServeConfig fails with the first of them).
struct CheckedServeConfig {
  ServeConfig config;
  std::vector<std::string> errors;
};
CheckedServeConfig CheckServeConfig(const EnvLookup& env,
                                    const std::map<std::string, std::string>& flags);

// The egress policy the configuration asks for (the index host allowed implicitly).
Result<egress::EgressConfig> EgressConfigFor(const ServeConfig& config);

// The per-session limits the configuration asks for (the others keep Limits' defaults).
Limits SessionLimits(const ServeConfig& config);

// How long a session may idle before it is hibernated: SANDBOX_HIBERNATE_AFTER_S, else the idle
// time-out; 0 = off.
std::chrono::milliseconds HibernateAfter(const ServeConfig& config);

// docs/configuration.md's table: | variable | flag | default | meaning |, a '|' in a cell
// escaped (`serve --help-markdown` prints it; tools/docs puts it in the page).
std::string ConfigTableMarkdown();

// "HOST:PORT", ":PORT", "PORT" or "HOST" (for `serve --http`), over the configured values.
Status ApplyHttpAddress(ServeConfig& config, const std::string& address);

}  // namespace sandbox::cli
