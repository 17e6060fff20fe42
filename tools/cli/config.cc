#include "tools/cli/config.h"

#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <utility>

#include <fmt/format.h>

#include "mcp/metrics_listener.h"
#include "mcp/public_url.h"
#include "rootfs/image_name.h"
#include "runtime/base/units.h"
#include "runtime/egress/egress_config.h"
#include "runtime/session/session_id.h"

namespace sandbox::cli {

namespace {

// Each parser fails with the reason only; LoadServeConfig adds the variable and the value.
Status Invalid(std::string_view why) { return Fail(ErrorCode::kInvalidArgument, "{}", why); }

Result<uint64_t> Size(const std::string& value, uint64_t min, uint64_t max) {
  auto bytes = ParseBytes(value);
  if (!bytes) return Fail(ErrorCode::kInvalidArgument, "not a size (examples: 512m, 1g, 1048576)");
  if (*bytes < min || *bytes > max) {
    return Fail(ErrorCode::kInvalidArgument, "must be between {} and {}", FormatBytes(min),
                FormatBytes(max));
  }
  return *bytes;
}

Result<double> Number(const std::string& value, double min, double max) {
  double number = 0;
  auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), number);
  if (error != std::errc() || end != value.data() + value.size() || !std::isfinite(number)) {
    return Fail(ErrorCode::kInvalidArgument, "not a number");
  }
  if (number < min || number > max) {
    return Fail(ErrorCode::kInvalidArgument, "must be between {} and {}", min, max);
  }
  return number;
}

// Seconds from "90", "90s", "30m", "12h" or "7d".
Result<int64_t> Duration(const std::string& value, int64_t min_s, int64_t max_s) {
  std::string number = value;
  int64_t unit = 1;
  if (!number.empty()) {
    switch (number.back()) {
      case 's':
        unit = 1;
        number.pop_back();
        break;
      case 'm':
        unit = 60;
        number.pop_back();
        break;
      case 'h':
        unit = 3600;
        number.pop_back();
        break;
      case 'd':
        unit = 86400;
        number.pop_back();
        break;
      default:
        break;
    }
  }
  int64_t count = 0;
  auto [end, error] = std::from_chars(number.data(), number.data() + number.size(), count);
  if (number.empty() || error != std::errc() || end != number.data() + number.size() || count < 0 ||
      count > max_s / unit || count * unit < min_s) {
    return Fail(ErrorCode::kInvalidArgument,
                "must be a duration between {} s and {} s (examples: 3600, 30m, 12h, 7d)", min_s,
                max_s);
  }
  return count * unit;
}

Result<int64_t> Integer(const std::string& value, int64_t min, int64_t max) {
  int64_t number = 0;
  auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), number);
  if (error != std::errc() || end != value.data() + value.size()) {
    return Fail(ErrorCode::kInvalidArgument, "not a whole number");
  }
  if (number < min || number > max) {
    return Fail(ErrorCode::kInvalidArgument, "must be between {} and {}", min, max);
  }
  return number;
}

Status OneOf(const std::string& value, std::initializer_list<std::string_view> choices) {
  std::string list;
  for (auto choice : choices) {
    if (value == choice) return {};
    list += list.empty() ? std::string(choice) : ", " + std::string(choice);
  }
  return Fail(ErrorCode::kInvalidArgument, "must be one of {}", list);
}

bool HasControlOrSpace(const std::string& value) {
  for (unsigned char c : value) {
    if (c <= 0x20 || c == 0x7F) return true;
  }
  return false;
}

struct NamedTokens {
  std::vector<std::string> secrets;
  std::vector<std::string> names;  // one per secret; "" = unnamed
};

// A name a token may carry: who its holder is (the owner of the sessions it creates).
bool IsTokenName(std::string_view name) {
  if (name.empty() || name.size() > 64) return false;
  for (char c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-' &&
        c != '@') {
      return false;
    }
  }
  return true;
}

// A list of accepted tokens: several, so that a new one can be rolled out to clients while the
// old one still works (rotation without a coordinated restart), and several users each with
// their own. Entries are separated by `sep` (',' in the variable, a line end in a file); an
// entry is a bare token, or a name and a token ("alice:s3cret" in the variable, "alice s3cret"
// in a file). A token never contains spaces or control characters.
Result<NamedTokens> TokenList(std::string_view text, char sep) {
  NamedTokens tokens;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(sep, start);
    std::string entry(text.substr(start, end == std::string_view::npos ? end : end - start));
    if (sep == '\n' && !entry.empty() && entry.back() == '\r') entry.pop_back();
    // "a, b" reads as two tokens, as the other comma lists do; a file's lines are trimmed too.
    auto first = entry.find_first_not_of(" \t");
    auto last = entry.find_last_not_of(" \t");
    entry = first == std::string::npos ? "" : entry.substr(first, last - first + 1);
    std::string name;
    size_t name_end = entry.find(sep == ',' ? ':' : ' ');
    if (sep != ',' && name_end == std::string::npos) name_end = entry.find('\t');
    if (name_end != std::string::npos && IsTokenName(entry.substr(0, name_end))) {
      name = entry.substr(0, name_end);
      auto secret = entry.find_first_not_of(" \t", name_end + 1);
      entry = secret == std::string::npos ? "" : entry.substr(secret);
      if (entry.empty()) {
        return Fail(ErrorCode::kInvalidArgument, "the token named {} is empty", name);
      }
    }
    if (!entry.empty()) {
      if (HasControlOrSpace(entry)) {
        return Fail(ErrorCode::kInvalidArgument,
                    "a token must not contain spaces or control characters");
      }
      tokens.secrets.push_back(std::move(entry));
      tokens.names.push_back(std::move(name));
    }
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  return tokens;
}

// The tokens of a token file, one per line, each alone or after a name and a space (blank
// lines skipped). Tokens are short: a file larger than 64 KiB is the wrong file, and is
// refused before it is read whole.
Result<NamedTokens> ReadTokenFile(const std::string& path) {
  constexpr size_t kMaxTokenFile = 64u << 10;
  std::ifstream file(path, std::ios::binary);
  if (!file) {
    return Fail(ErrorCode::kInvalidArgument, "cannot read it: {}", std::strerror(errno));
  }
  std::string content(kMaxTokenFile + 1, '\0');
  file.read(content.data(), static_cast<std::streamsize>(content.size()));
  content.resize(static_cast<size_t>(file.gcount()));
  if (content.size() > kMaxTokenFile) {
    return Fail(ErrorCode::kInvalidArgument, "larger than {} bytes: not a token file",
                kMaxTokenFile);
  }
  SBX_ASSIGN_OR_RETURN(auto tokens, TokenList(content, '\n'));
  if (tokens.secrets.empty()) return Fail(ErrorCode::kInvalidArgument, "it holds no token");
  return tokens;
}

// A space- or comma-separated list of OAuth scope names (RFC 6749 §3.3 scope-token).
Result<std::vector<std::string>> ScopeList(std::string_view text) {
  std::vector<std::string> scopes;
  std::string scope;
  for (size_t i = 0; i <= text.size(); ++i) {
    char c = i < text.size() ? text[i] : ' ';
    if (c == ' ' || c == ',') {
      if (!scope.empty()) scopes.push_back(std::move(scope));
      scope.clear();
    } else if (c < 0x21 || c == '"' || c == '\\' || c == 0x7F) {
      return Fail(ErrorCode::kInvalidArgument,
                  "a scope is printable ASCII without quotes or backslashes");
    } else {
      scope += c;
    }
  }
  return scopes;
}

// "http://host[:port]" or "https://...", or "*".
Status CheckOrigin(const std::string& origin) {
  if (origin == "*") return {};
  auto scheme_end = origin.find("://");
  if (scheme_end == std::string::npos) return Invalid("an origin looks like http://host:port");
  std::string scheme = origin.substr(0, scheme_end);
  if (scheme != "http" && scheme != "https") return Invalid("an origin's scheme is http or https");
  std::string rest = origin.substr(scheme_end + 3);
  if (rest.empty() || rest.find('/') != std::string::npos || HasControlOrSpace(rest)) {
    return Invalid("an origin is scheme://host[:port] with no path");
  }
  return {};
}

#define SBX_ASSIGN_FIELD(field, expr)                             \
  do {                                                            \
    auto parsed_ = (expr);                                        \
    if (!parsed_) return Fail(std::move(parsed_).error());        \
    config.field = static_cast<decltype(config.field)>(*parsed_); \
  } while (0)

const std::vector<ConfigVariable> kVariables = {
    {"SANDBOX_IMAGE", "--image", "python",
     "Image for new sessions: a name or digest in the image store (`mcp-sandbox image ls`)",
     [](ServeConfig& config, const std::string& value) -> Status {
       if (!rootfs::IsValidImageReference(value)) {
         return Invalid("must be an image name (python, python:3.12, ghcr.io/org/img) or digest");
       }
       config.image = value;
       return {};
     }},
    {"SANDBOX_MEMORY_LIMIT", "--memory-limit", "512m",
     "Memory per session (and the most a session may ask for)",
     [](ServeConfig& config, const std::string& value) -> Status {
       SBX_ASSIGN_FIELD(memory_bytes, Size(value, 32ull << 20, 1ull << 40));
       return {};
     }},
    {"SANDBOX_CPU_LIMIT", "--cpu-limit", "1.0", "CPUs per session (CPU time per wall-clock second)",
     [](ServeConfig& config, const std::string& value) -> Status {
       SBX_ASSIGN_FIELD(cpus, Number(value, 0.01, 1024));
       return {};
     }},
    {"SANDBOX_PIDS_LIMIT", "--pids-limit", "256", "Processes and threads per session",
     [](ServeConfig& config, const std::string& value) -> Status {
       SBX_ASSIGN_FIELD(pids, Integer(value, 8, 1 << 22));
       return {};
     }},
    {"SANDBOX_DISK_LIMIT", "--disk-limit", "",
     "Size of each session's /mnt/data (a tmpfs: its pages count as the session's memory); "
     "default half of SANDBOX_MEMORY_LIMIT, at most 1g; refused above half",
     [](ServeConfig& config, const std::string& value) -> Status {
       SBX_ASSIGN_FIELD(disk_bytes, Size(value, 1ull << 20, 1ull << 40));
       return {};
     }},
    {"SANDBOX_EXEC_TIMEOUT_S", "--exec-timeout-s", "60",
     "Seconds a run may take: the default and the maximum of a call's `timeout_s`",
     [](ServeConfig& config, const std::string& value) -> Status {
       SBX_ASSIGN_FIELD(exec_timeout_s, Number(value, 0.1, 86400));
       return {};
     }},
    {"SANDBOX_SESSION_TTL_M", "--session-ttl-m", "30",
     "Minutes of idleness after which a session is closed",
     [](ServeConfig& config, const std::string& value) -> Status {
       SBX_ASSIGN_FIELD(session_ttl_m, Integer(value, 1, 7 * 24 * 60));
       return {};
     }},
    {"SANDBOX_HIBERNATE_AFTER_S", "--hibernate-after-s", "",
     "Seconds of idleness after which a session is saved (files and Python state) and its "
     "sandbox stopped, until the next call resumes it; default the idle time-out "
     "(SANDBOX_SESSION_TTL_M), 0 = off (idle sessions are closed)",
     [](ServeConfig& config, const std::string& value) -> Status {
       SBX_ASSIGN_FIELD(hibernate_after_s, Number(value, 0, 7 * 86400));
       return {};
     }},
    {"SANDBOX_SAVED_MAX_BYTES", "--saved-max-bytes", "10g",
     "Disk all hibernated sessions may take together; a hibernation evicts (and logs) its own "
     "subject's oldest saves first, never another's, and a fork evicts none (refused instead)",
     [](ServeConfig& config, const std::string& value) -> Status {
       SBX_ASSIGN_FIELD(saved_max_bytes, Size(value, 1ull << 20, 1ull << 50));
       return {};
     }},
    {"SANDBOX_SAVED_TTL", "--saved-ttl", "7d",
     "How long a hibernated session is kept (a number with s, m, h or d)",
     [](ServeConfig& config, const std::string& value) -> Status {
       SBX_ASSIGN_FIELD(saved_ttl_s, Duration(value, 60, 365ll * 86400));
       return {};
     }},
    {"SANDBOX_MAX_SESSIONS", "--max-sessions", "10", "Sessions open at once",
     [](ServeConfig& config, const std::string& value) -> Status {
       SBX_ASSIGN_FIELD(max_sessions, Integer(value, 1, 10000));
       return {};
     }},
    {"SANDBOX_POOL_SIZE", "--pool-size", "2",
     "Sandboxes of the default image and limits kept started, the preload imported, for new "
     "sessions to take (0 = no pool, no preload)",
     [](ServeConfig& config, const std::string& value) -> Status {
       SBX_ASSIGN_FIELD(pool_size, Integer(value, 0, 100));
       return {};
     }},
    {"SANDBOX_POOL_PRELOAD", "--pool-preload", "numpy,pandas,matplotlib.pyplot",
     "Modules the pool's sandboxes (and sessions of their kind) have imported before the first "
     "cell, comma-separated; one that fails to import is logged and left out",
     [](ServeConfig& config, const std::string& value) -> Status {
       for (char c : value) {
         if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == ',')) {
           return Invalid("must be module names separated by commas");
         }
       }
       config.pool_preload = value;
       return {};
     }},
    {"SANDBOX_MAX_UPLOAD_BYTES", "--max-upload-bytes", "50m", "Largest file a client may upload",
     [](ServeConfig& config, const std::string& value) -> Status {
       SBX_ASSIGN_FIELD(max_upload_bytes, Size(value, 1, 4ull << 30));
       return {};
     }},
    {"SANDBOX_MAX_OUTPUT_BYTES", "--max-output-bytes", "100k",
     "stdout and stderr kept per run (each, at most 32m); the rest is cut and flagged",
     [](ServeConfig& config, const std::string& value) -> Status {
       // 32 MiB: the agent's cap, so both streams of a result fit in one protocol frame.
       SBX_ASSIGN_FIELD(max_output_bytes, Size(value, 1024, 32ull << 20));
       return {};
     }},
    {"SANDBOX_MAX_CODE_BYTES", "--max-code-bytes", "100k", "Largest code or command per call",
     [](ServeConfig& config, const std::string& value) -> Status {
       SBX_ASSIGN_FIELD(max_code_bytes, Size(value, 1024, 64ull << 20));
       return {};
     }},
    {"SANDBOX_MAX_RESULT_BYTES", "--max-result-bytes", "1m",
     "Largest tool result (text, images and resources together); larger parts are cut or linked",
     [](ServeConfig& config, const std::string& value) -> Status {
       SBX_ASSIGN_FIELD(max_result_bytes, Size(value, 16ull << 10, 1ull << 30));
       return {};
     }},
    {"SANDBOX_HTTP_HOST", "--http-host", "127.0.0.1",
     "Address `serve --http` binds (use 0.0.0.0 only behind auth and a proxy)",
     [](ServeConfig& config, const std::string& value) -> Status {
       if (value.empty() || HasControlOrSpace(value)) return Invalid("must be a host address");
       config.http_host = value;
       return {};
     }},
    {"SANDBOX_HTTP_PORT", "--http-port", "8080",
     "Port `serve --http` listens on (0: any free port)",
     [](ServeConfig& config, const std::string& value) -> Status {
       SBX_ASSIGN_FIELD(http_port, Integer(value, 0, 65535));
       return {};
     }},
    {"SANDBOX_AUTH_TOKEN", "--auth-token", "",
     "Bearer token HTTP clients must send (`Authorization: Bearer ...`); several, "
     "comma-separated, are each accepted (rotation: add the new one, move clients, drop the old "
     "one); `name:token` names its holder, who alone sees the sessions it creates "
     "(docs/many-users.md); prefer the variable to the flag, which other users can see in `ps`",
     [](ServeConfig& config, const std::string& value) -> Status {
       SBX_ASSIGN_OR_RETURN(auto tokens, TokenList(value, ','));
       config.auth_tokens = std::move(tokens.secrets);
       config.auth_token_names = std::move(tokens.names);
       return {};
     }},
    {"SANDBOX_AUTH_TOKEN_FILE", "--auth-token-file", "",
     "File holding the bearer token, or several, one per line (each accepted; `name token` "
     "names its holder), e.g. a systemd "
     "credential (`LoadCredential=`); keeps tokens out of the environment and `ps`. Not "
     "together with SANDBOX_AUTH_TOKEN",
     [](ServeConfig& config, const std::string& value) -> Status {
       if (!config.auth_tokens.empty()) {
         return Invalid("set one of SANDBOX_AUTH_TOKEN and SANDBOX_AUTH_TOKEN_FILE, not both");
       }
       SBX_ASSIGN_OR_RETURN(auto tokens, ReadTokenFile(value));
       config.auth_tokens = std::move(tokens.secrets);
       config.auth_token_names = std::move(tokens.names);
       return {};
     }},
    {"SANDBOX_OAUTH_ISSUER", "--oauth-issuer", "",
     "OAuth 2.1 authorization server whose JWT access tokens are accepted (its `iss`, e.g. "
     "https://idp.example.com/realms/team); its keys come from its metadata (docs/many-users.md)",
     [](ServeConfig& config, const std::string& value) -> Status {
       if (value.empty()) {
         config.oauth_issuer.clear();
         return {};
       }
       if (value.rfind("https://", 0) != 0 && value.rfind("http://", 0) != 0) {
         return Invalid("an issuer is an https:// URL");
       }
       if (HasControlOrSpace(value) || value.find_first_of("?#") != std::string::npos) {
         return Invalid("an issuer URL has no spaces, query or fragment");
       }
       config.oauth_issuer = value;
       return {};
     }},
    {"SANDBOX_OAUTH_ALLOW_HTTP_ISSUER", "--oauth-allow-http-issuer", "off",
     "on: accept an http:// SANDBOX_OAUTH_ISSUER on another host than this one (its signing keys "
     "then travel unencrypted, and whoever can change them can sign tokens); off: https://, or "
     "http:// to localhost, 127.0.0.0/8 or [::1] only. An http:// issuer is logged as a warning",
     [](ServeConfig& config, const std::string& value) -> Status {
       SBX_TRY(OneOf(value, {"on", "off"}));
       config.oauth_allow_http_issuer = value == "on";
       return {};
     }},
    {"SANDBOX_OAUTH_RESOURCE", "--oauth-resource", "",
     "This server's resource identifier (RFC 8707): the `aud` its tokens must carry; default "
     "SANDBOX_PUBLIC_URL + /mcp, else http://HOST:PORT/mcp of the bound address",
     [](ServeConfig& config, const std::string& value) -> Status {
       SBX_ASSIGN_OR_RETURN(config.oauth_resource, mcp::ParsePublicUrl(value));
       return {};
     }},
    {"SANDBOX_OAUTH_SCOPES", "--oauth-scopes", "",
     "Scopes an access token must hold, space- or comma-separated (`403 insufficient_scope` "
     "names the missing ones); \"\" = none",
     [](ServeConfig& config, const std::string& value) -> Status {
       SBX_ASSIGN_OR_RETURN(config.oauth_scopes, ScopeList(value));
       return {};
     }},
    {"SANDBOX_OAUTH_JWKS_REFRESH_S", "--oauth-jwks-refresh-s", "10",
     "Least seconds between two fetches of the issuer's keys when a token names an unknown "
     "key id (rotation); keys are also fetched again every 15 minutes",
     [](ServeConfig& config, const std::string& value) -> Status {
       SBX_ASSIGN_FIELD(oauth_jwks_refresh_s, Number(value, 0.1, 3600));
       return {};
     }},
    {"SANDBOX_OAUTH_QUOTA_CLAIM", "--oauth-quota-claim", "",
     "Access-token claim whose object {max_sessions, memory, cpus, max_saved, saved_bytes} sets "
     "that subject's quota in place of SANDBOX_SUBJECT_*, capped by the server's own limits; "
     "\"\" = none",
     [](ServeConfig& config, const std::string& value) -> Status {
       if (HasControlOrSpace(value) || value.size() > 200) {
         return Invalid("a claim name has no spaces and at most 200 characters");
       }
       config.oauth_quota_claim = value;
       return {};
     }},
    {"SANDBOX_SUBJECT_MAX_SESSIONS", "--subject-max-sessions", "0",
     "Live sessions one named caller (a named token, an OAuth subject) may hold at once; 0 = "
     "only SANDBOX_MAX_SESSIONS",
     [](ServeConfig& config, const std::string& value) -> Status {
       SBX_ASSIGN_FIELD(subject_max_sessions, Integer(value, 0, 10000));
       return {};
     }},
    {"SANDBOX_SUBJECT_MAX_MEMORY", "--subject-max-memory", "",
     "Largest memory limit a named caller's session may have (larger asks are refused, the "
     "default is lowered to it); \"\" = SANDBOX_MEMORY_LIMIT",
     [](ServeConfig& config, const std::string& value) -> Status {
       if (value.empty()) {
         config.subject_max_memory_bytes = 0;
         return {};
       }
       SBX_ASSIGN_FIELD(subject_max_memory_bytes, Size(value, 32ull << 20, 1ull << 40));
       return {};
     }},
    {"SANDBOX_SUBJECT_MAX_CPUS", "--subject-max-cpus", "0",
     "Largest CPU limit a named caller's session may have; 0 = SANDBOX_CPU_LIMIT",
     [](ServeConfig& config, const std::string& value) -> Status {
       SBX_ASSIGN_FIELD(subject_max_cpus, Number(value, 0, 1024));
       return {};
     }},
    {"SANDBOX_SUBJECT_MAX_SAVED", "--subject-max-saved", "0",
     "Saved sessions (hibernated or forked) one named caller may keep; a fork beyond it is "
     "refused, a hibernation evicts that caller's own oldest save; 0 = no count of its own",
     [](ServeConfig& config, const std::string& value) -> Status {
       SBX_ASSIGN_FIELD(subject_max_saved, Integer(value, 0, 10000));
       return {};
     }},
    {"SANDBOX_SUBJECT_SAVED_BYTES", "--subject-saved-bytes", "",
     "Disk one named caller's saved sessions may take together, within SANDBOX_SAVED_MAX_BYTES "
     "(a fork beyond it is refused, a hibernation evicts that caller's own oldest save); \"\" = "
     "only SANDBOX_SAVED_MAX_BYTES",
     [](ServeConfig& config, const std::string& value) -> Status {
       if (value.empty()) {
         config.subject_saved_bytes = 0;
         return {};
       }
       SBX_ASSIGN_FIELD(subject_saved_bytes, Size(value, 1ull << 20, 1ull << 50));
       return {};
     }},
    {"SANDBOX_ALLOWED_ORIGINS", "--allowed-origins", "",
     "Comma-separated origins (http://host:port, or *) allowed to call the HTTP endpoint; "
     "default: localhost, 127.0.0.1 and [::1] on the bound port",
     [](ServeConfig& config, const std::string& value) -> Status {
       config.allowed_origins.clear();
       size_t start = 0;
       while (start <= value.size()) {
         size_t comma = value.find(',', start);
         std::string origin =
             value.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
         auto first = origin.find_first_not_of(' ');
         auto last = origin.find_last_not_of(' ');
         origin = first == std::string::npos ? "" : origin.substr(first, last - first + 1);
         if (!origin.empty()) {
           while (!origin.empty() && origin.back() == '/') origin.pop_back();
           SBX_TRY(CheckOrigin(origin));
           config.allowed_origins.push_back(origin);
         }
         if (comma == std::string::npos) break;
         start = comma + 1;
       }
       return {};
     }},
    {"SANDBOX_LOG_LEVEL", "--log-level", "info",
     "Server log level: trace, debug, info, warn, error, critical, off",
     [](ServeConfig& config, const std::string& value) -> Status {
       std::string level = value == "warning" ? "warn" : value;
       SBX_TRY(OneOf(level, {"trace", "debug", "info", "warn", "error", "critical", "off"}));
       config.log_level = level;
       return {};
     }},
    {"SANDBOX_LOG_FILE", "--log-file", "", "Write the server log to this file instead of stderr",
     [](ServeConfig& config, const std::string& value) -> Status {
       config.log_file = value;
       return {};
     }},
    {"SANDBOX_LOG_FORMAT", "--log-format", "console",
     "Server log format: console or json (one object per line)",
     [](ServeConfig& config, const std::string& value) -> Status {
       SBX_TRY(OneOf(value, {"console", "json"}));
       config.log_format = value;
       return {};
     }},
    {"SANDBOX_BACKEND", "--backend", "auto",
     "Sandbox technology: auto (namespaces when this host allows them, else Docker), namespace, "
     "docker, gvisor (runsc; only when named)",
     [](ServeConfig& config, const std::string& value) -> Status {
       SBX_TRY(OneOf(value, {"auto", "namespace", "docker", "gvisor"}));
       config.backend = value;
       return {};
     }},
    {"SANDBOX_RUNSC", "--runsc", "runsc",
     "gVisor backend: the runsc binary, a path or a name looked up in PATH",
     [](ServeConfig& config, const std::string& value) -> Status {
       if (value.empty()) return Invalid("must name the runsc binary");
       config.runsc = value;
       return {};
     }},
    {"SANDBOX_GVISOR_PLATFORM", "--gvisor-platform", "ptrace",
     "gVisor backend: how the Sentry traps the sandbox's system calls: ptrace (works anywhere, "
     "slowest), systrap (runsc 20230227 or later), kvm (needs /dev/kvm)",
     [](ServeConfig& config, const std::string& value) -> Status {
       SBX_TRY(OneOf(value, {"ptrace", "systrap", "kvm"}));
       config.gvisor_platform = value;
       return {};
     }},
    {"SANDBOX_DOCKER_RUNTIME", "--docker-runtime", "",
     "Docker backend: the OCI runtime the daemon runs sandboxes with (HostConfig.Runtime), e.g. "
     "runsc for gVisor's kernel as a second wall; the daemon must have it registered "
     "(`dockerd --add-runtime` or daemon.json). Default: the daemon's own (runc)",
     [](ServeConfig& config, const std::string& value) -> Status {
       for (char c : value) {
         if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') {
           return Invalid(
               "must be a runtime name as the daemon registers it (a-z, 0-9, '-', "
               "'_', '.')");
         }
       }
       config.docker_runtime = value;
       return {};
     }},
    {"SANDBOX_STATE_DIR", "--state-dir", "",
     "Images, session records and cgroups state; default /var/lib/mcp-sandbox as root, else "
     "$XDG_STATE_HOME/mcp-sandbox",
     [](ServeConfig& config, const std::string& value) -> Status {
       if (!value.empty() && value.front() != '/') return Invalid("must be an absolute path");
       config.state_dir = value;
       return {};
     }},
    {"SANDBOX_WHEELHOUSE", "--wheelhouse", "",
     "Directory of wheels for sandbox_install_packages (mounted read-only at /mnt/wheelhouse; "
     "installs are offline)",
     [](ServeConfig& config, const std::string& value) -> Status {
       if (!value.empty() && value.front() != '/') return Invalid("must be an absolute path");
       config.wheelhouse = value;
       return {};
     }},
    {"SANDBOX_EGRESS_ALLOW", "--egress-allow", "",
     "Hosts sandboxes may reach through the server's HTTP(S) proxy, comma-separated: "
     "`pypi.org`, `*.example.com` (subdomains), `host:port` (default 80 and 443), IPs and CIDRs "
     "(the only way to a private or loopback address), `pypi` (pypi.org and "
     "files.pythonhosted.org). Empty: no network",
     [](ServeConfig& config, const std::string& value) -> Status {
       auto parsed = egress::Allowlist::Parse(value);
       if (!parsed) return Invalid(parsed.error().message);
       config.egress_allow = value;
       return {};
     }},
    {"SANDBOX_EGRESS_MAX_BYTES", "--egress-max-bytes", "1g",
     "Bytes a session may carry through its egress proxy, both directions",
     [](ServeConfig& config, const std::string& value) -> Status {
       SBX_ASSIGN_FIELD(egress_max_bytes, Size(value, 1, 1ull << 50));
       return {};
     }},
    {"SANDBOX_INDEX_URL", "--index-url", "",
     "Package index for sandbox_install_packages and pip in sandboxes when egress is on (its "
     "host is allowed implicitly; default https://pypi.org/simple when pypi.org is allowed); "
     "also `image build --pip`'s default",
     [](ServeConfig& config, const std::string& value) -> Status {
       if (!value.empty()) {
         auto host = egress::HostOfUrl(value);
         if (!host) return Invalid(host.error().message);
       }
       config.index_url = value;
       return {};
     }},
    {"SANDBOX_REPLICA_ID", "--replica-id", "",
     "This server's name among replicas behind one proxy (`r2`, a StatefulSet pod's name): "
     "a DNS label of at most 63 characters. Session ids become sess_<replica>_<32 hex> and "
     "transport ids mcps_<replica>_<32 hex>, so the proxy routes each call by its prefix",
     [](ServeConfig& config, const std::string& value) -> Status {
       if (!IsValidReplicaId(value)) {
         return Invalid(
             "must be 1 to 63 of a-z, 0-9 and '-', starting with a letter and not ending with "
             "'-' (no '_': it separates the replica in session ids)");
       }
       config.replica_id = value;
       return {};
     }},
    {"SANDBOX_DRAIN_TIMEOUT_S", "--drain-timeout-s", "0",
     "Drain on the first SIGTERM/SIGINT for at most this many seconds: /readyz says 404, no new "
     "sessions (server_draining), open ones go on until idle; a second signal stops at once. "
     "0: stop at once (sessions hibernated, or closed with hibernation off)",
     [](ServeConfig& config, const std::string& value) -> Status {
       SBX_ASSIGN_FIELD(drain_timeout_s, Number(value, 0, 7 * 86400));
       return {};
     }},
    {"SANDBOX_DRAIN_IDLE_S", "--drain-idle-s", "60",
     "While draining, seconds of idleness after which a session is hibernated (closed when "
     "hibernation is off) instead of after SANDBOX_SESSION_TTL_M",
     [](ServeConfig& config, const std::string& value) -> Status {
       SBX_ASSIGN_FIELD(drain_idle_s, Number(value, 0, 7 * 86400));
       return {};
     }},
    {"SANDBOX_USAGE", "--usage", "on",
     "on: every run measures what it used (CPU, memory peak) and the metrics count events; off: "
     "neither (runs report no usage, /metrics only the gauges), for the benchmark that compares",
     [](ServeConfig& config, const std::string& value) -> Status {
       SBX_TRY(OneOf(value, {"on", "off"}));
       config.usage = value == "on";
       return {};
     }},
    {"SANDBOX_METRICS_ADDR", "--metrics-addr", "",
     "HOST:PORT of a listener of its own serving GET /metrics (Prometheus text format) without "
     "a token, for a scraper on the node; the only way to scrape a stdio server. The HTTP "
     "listener serves /metrics too, behind SANDBOX_AUTH_TOKEN. Default: none",
     [](ServeConfig& config, const std::string& value) -> Status {
       if (!value.empty()) {
         if (auto address = mcp::ParseListenAddress(value); !address) {
           return Invalid(address.error().message);
         }
       }
       config.metrics_addr = value;
       return {};
     }},
    {"SANDBOX_PUBLIC_URL", "--public-url", "",
     "The address clients reach this server at (`https://sandbox.example.com/mcp-1`: scheme, "
     "host, optional path prefix), for download links; default http:// and the request's Host",
     [](ServeConfig& config, const std::string& value) -> Status {
       SBX_ASSIGN_OR_RETURN(config.public_url, mcp::ParsePublicUrl(value));
       return {};
     }},
    {"SANDBOX_DOWNLOAD_TTL", "--download-ttl", "1h",
     "How long a download link (download_url) opens its file, from the tool result that gave it "
     "(a number with s, m, h or d; at most 7d); a later call gives a fresh link",
     [](ServeConfig& config, const std::string& value) -> Status {
       SBX_ASSIGN_FIELD(download_ttl_s, Duration(value, 1, 7 * 86400));
       return {};
     }},
    {"SANDBOX_HTTP_MAX_CONNECTIONS", "--http-max-connections", "8192",
     "Open HTTP connections in all (lowered to fit the descriptor limit); more get 503",
     [](ServeConfig& config, const std::string& value) -> Status {
       SBX_ASSIGN_FIELD(http_max_connections, Integer(value, 1, 1 << 20));
       return {};
     }},
    {"SANDBOX_HTTP_MAX_CONNECTIONS_PER_PEER", "--http-max-connections-per-peer", "1024",
     "Open HTTP connections per client address; behind a proxy every client has the proxy's "
     "address, so raise it to SANDBOX_HTTP_MAX_CONNECTIONS and cap clients in the proxy",
     [](ServeConfig& config, const std::string& value) -> Status {
       SBX_ASSIGN_FIELD(http_max_connections_per_peer, Integer(value, 1, 1 << 20));
       return {};
     }},
    {"SANDBOX_HTTP_MAX_TRANSPORT_SESSIONS", "--http-max-transport-sessions", "1000",
     "2025-era transport sessions (Mcp-Session-Id) kept at once; the least recently used idle "
     "one is forgotten for a new one",
     [](ServeConfig& config, const std::string& value) -> Status {
       SBX_ASSIGN_FIELD(http_max_transport_sessions, Integer(value, 1, 1 << 20));
       return {};
     }},
    {"SANDBOX_HTTP_HEADER_TIMEOUT_S", "--http-header-timeout-s", "10",
     "Seconds from a connection (or a request's first byte) to the end of its headers",
     [](ServeConfig& config, const std::string& value) -> Status {
       SBX_ASSIGN_FIELD(http_header_timeout_s, Number(value, 0.1, 3600));
       return {};
     }},
    {"SANDBOX_HTTP_IDLE_TIMEOUT_S", "--http-idle-timeout-s", "30",
     "Seconds a kept-alive connection may wait for its next request (keep the proxy's own "
     "keep-alive timeout below it)",
     [](ServeConfig& config, const std::string& value) -> Status {
       SBX_ASSIGN_FIELD(http_idle_timeout_s, Number(value, 0.1, 86400));
       return {};
     }},
    {"SANDBOX_HTTP_BODY_TIMEOUT_S", "--http-body-timeout-s", "30",
     "Seconds a request body may take to arrive, plus 1 s per MiB declared",
     [](ServeConfig& config, const std::string& value) -> Status {
       SBX_ASSIGN_FIELD(http_body_timeout_s, Number(value, 0.1, 3600));
       return {};
     }},
};

#undef SBX_ASSIGN_FIELD

}  // namespace

const std::vector<ConfigVariable>& ConfigVariables() { return kVariables; }

std::optional<std::string> ProcessEnv(const std::string& name) {
  const char* value = std::getenv(name.c_str());
  if (value == nullptr) return std::nullopt;
  return std::string(value);
}

CheckedServeConfig CheckServeConfig(const EnvLookup& env,
                                    const std::map<std::string, std::string>& flags) {
  CheckedServeConfig checked;
  ServeConfig& config = checked.config;
  for (const auto& variable : kVariables) {
    std::string value = variable.default_value;
    std::string source = "the default of " + std::string(variable.env);
    if (auto from_env = env(variable.env)) {
      value = *from_env;
      source = variable.env;
    }
    if (auto flag = flags.find(variable.flag); flag != flags.end()) {
      value = flag->second;
      source = fmt::format("{} ({})", variable.flag, variable.env);
    }
    if (value.empty() && variable.default_value[0] == '\0') continue;  // optional and unset
    // On a copy: a parser that fails half-way must not leave half a value behind.
    ServeConfig trial = config;
    if (auto applied = variable.apply(trial, value); !applied) {
      checked.errors.push_back(fmt::format("{}='{}': {}", source, value, applied.error().message));
      if (variable.default_value[0] != '\0') (void)variable.apply(config, variable.default_value);
      continue;
    }
    config = std::move(trial);
  }
  // /mnt/data is a tmpfs charged to the session's memory (runtime/limits.h): derived from the
  // memory limit when unset, refused when the memory limit could never hold it.
  if (config.disk_bytes == 0) {
    config.disk_bytes = DefaultDataBytes(config.memory_bytes);
  } else if (config.disk_bytes > MaxDataBytes(config.memory_bytes)) {
    checked.errors.push_back(fmt::format(
        "SANDBOX_DISK_LIMIT ({}) is more than half of SANDBOX_MEMORY_LIMIT ({}): /mnt/data is a "
        "tmpfs whose pages count as the session's memory, so filling it would get the session "
        "OOM-killed instead of ENOSPC; set SANDBOX_DISK_LIMIT to at most {} or raise "
        "SANDBOX_MEMORY_LIMIT to at least {}",
        FormatBytes(config.disk_bytes), FormatBytes(config.memory_bytes),
        FormatBytes(MaxDataBytes(config.memory_bytes)), FormatBytes(2 * config.disk_bytes)));
    config.disk_bytes = DefaultDataBytes(config.memory_bytes);  // as for any refused value
  }
  return checked;
}

Result<ServeConfig> LoadServeConfig(const EnvLookup& env,
                                    const std::map<std::string, std::string>& flags) {
  CheckedServeConfig checked = CheckServeConfig(env, flags);
  if (!checked.errors.empty()) {
    return Fail(ErrorCode::kInvalidArgument, "{}", checked.errors.front());
  }
  return std::move(checked.config);
}

Result<egress::EgressConfig> EgressConfigFor(const ServeConfig& config) {
  egress::EgressConfig egress;
  SBX_ASSIGN_OR_RETURN(egress.allow, egress::Allowlist::Parse(config.egress_allow));
  egress.limits.max_bytes = config.egress_max_bytes;
  egress.index_url = config.index_url;
  SBX_TRY(egress::ApplyIndexUrl(egress));
  return egress;
}

Limits SessionLimits(const ServeConfig& config) {
  Limits limits;
  limits.memory_bytes = config.memory_bytes;
  limits.cpus = config.cpus;
  limits.pids = config.pids;
  limits.disk_bytes = config.disk_bytes;
  limits.tmp_bytes = TmpBytesFor(config.memory_bytes);
  return limits;
}

std::string ConfigTableMarkdown() {
  std::string table = "| variable | `serve` flag | default | meaning |\n|---|---|---|---|\n";
  for (const auto& variable : kVariables) {
    std::string default_text =
        variable.default_value[0] == '\0' ? "—" : fmt::format("`{}`", variable.default_value);
    std::string meaning;
    for (const char* c = variable.meaning; *c != '\0'; ++c) {
      if (*c == '|') meaning += '\\';  // a bare '|' would end the cell
      meaning += *c;
    }
    table += fmt::format("| `{}` | `{}` | {} | {} |\n", variable.env, variable.flag, default_text,
                         meaning);
  }
  return table;
}

Status ApplyHttpAddress(ServeConfig& config, const std::string& address) {
  if (address.empty()) return {};
  std::string host;
  std::string port;
  if (address.front() == '[') {  // [::1]:8080
    auto close = address.find(']');
    if (close == std::string::npos) return Invalid("an IPv6 address goes in brackets: [::1]:8080");
    host = address.substr(1, close - 1);
    if (close + 1 < address.size()) {
      if (address[close + 1] != ':') return Invalid("expected HOST:PORT");
      port = address.substr(close + 2);
    }
  } else if (auto colon = address.rfind(':'); colon != std::string::npos) {
    host = address.substr(0, colon);
    port = address.substr(colon + 1);
  } else if (address.find_first_not_of("0123456789") == std::string::npos) {
    port = address;
  } else {
    host = address;
  }
  if (!host.empty()) {
    if (HasControlOrSpace(host)) return Invalid("must be a host address");
    config.http_host = host;
  }
  if (!port.empty()) {
    auto number = Integer(port, 0, 65535);
    if (!number) return Invalid("the port must be a number from 0 to 65535");
    config.http_port = static_cast<int>(*number);
  }
  return {};
}

std::chrono::milliseconds HibernateAfter(const ServeConfig& config) {
  if (config.hibernate_after_s < 0) return std::chrono::minutes(config.session_ttl_m);
  return std::chrono::milliseconds(static_cast<int64_t>(config.hibernate_after_s * 1000));
}

}  // namespace sandbox::cli
