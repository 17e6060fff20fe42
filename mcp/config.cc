#include "mcp/config.h"

#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <utility>

#include <fmt/format.h>

#include "rootfs/image_name.h"
#include "runtime/base/units.h"
#include "runtime/egress/egress_config.h"

namespace sandbox::mcp {

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

// The first line of a token file, without its line end. A token is short: a file larger than
// 4 KiB is the wrong file, and is refused before it is read whole.
Result<std::string> ReadTokenFile(const std::string& path) {
  constexpr size_t kMaxTokenFile = 4096;
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
  std::string token = content.substr(0, content.find('\n'));
  if (!token.empty() && token.back() == '\r') token.pop_back();
  if (token.empty()) return Fail(ErrorCode::kInvalidArgument, "its first line is empty");
  if (HasControlOrSpace(token)) {
    return Fail(ErrorCode::kInvalidArgument,
                "the token must not contain spaces or control characters");
  }
  return token;
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
     "Bearer token HTTP clients must send (`Authorization: Bearer ...`); prefer the variable "
     "to the flag, which other users can see in `ps`",
     [](ServeConfig& config, const std::string& value) -> Status {
       if (HasControlOrSpace(value))
         return Invalid("must not contain spaces or control characters");
       config.auth_token = value;
       return {};
     }},
    {"SANDBOX_AUTH_TOKEN_FILE", "--auth-token-file", "",
     "File holding the bearer token (its first line), e.g. a systemd credential "
     "(`LoadCredential=`); keeps the token out of the environment and `ps`",
     [](ServeConfig& config, const std::string& value) -> Status {
       if (!config.auth_token.empty()) {
         return Invalid("set one of SANDBOX_AUTH_TOKEN and SANDBOX_AUTH_TOKEN_FILE, not both");
       }
       SBX_ASSIGN_OR_RETURN(std::string token, ReadTokenFile(value));
       config.auth_token = std::move(token);
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
     "docker",
     [](ServeConfig& config, const std::string& value) -> Status {
       SBX_TRY(OneOf(value, {"auto", "namespace", "docker"}));
       config.backend = value;
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
    table += fmt::format("| `{}` | `{}` | {} | {} |\n", variable.env, variable.flag, default_text,
                         variable.meaning);
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

}  // namespace sandbox::mcp
