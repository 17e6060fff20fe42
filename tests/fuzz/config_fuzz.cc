// Fuzz target: the configuration parser (tools/cli/config.h). The input is lines of
// "SANDBOX_NAME=value" (the environment), "--flag=value" (serve's flags) and "@address"
// (serve --http); each SANDBOX_* variable and flag is read as `serve` reads it.
// Invariants: nothing throws or crashes; LoadServeConfig fails exactly when CheckServeConfig
// reports errors, with the first of them; a loaded configuration yields session limits.
// SANDBOX_AUTH_TOKEN_FILE is the one value that opens a file: its value is confined to a
// directory of token files made here, so no input makes the parser read a FIFO or a device.
#include <stdlib.h>

#include <cstddef>
#include <cstdint>
#include <fstream>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include "tests/fuzz/fuzz_check.h"
#include "tools/cli/config.h"

namespace {

// Token files the fuzzer may name by their base name: a good one, an empty one, one with a
// space, one too large.
const std::string& TokenDir() {
  static const std::string dir = [] {
    char path[] = "/tmp/mcp-sandbox-fuzz-config-XXXXXX";
    if (mkdtemp(path) == nullptr) throw std::runtime_error("mkdtemp failed");
    std::string d = path;
    std::ofstream(d + "/good") << "s3cret-token\n";
    std::ofstream(d + "/empty");
    std::ofstream(d + "/space") << "two words\r\n";
    std::ofstream(d + "/big") << std::string(5000, 'a');
    return d;
  }();
  return dir;
}

std::string ConfinedTokenPath(std::string_view value) {
  std::string name;
  for (char c : value) {
    if (c != '/' && c != '.') name += c;
  }
  return TokenDir() + "/" + name;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::map<std::string, std::string> env;
  std::map<std::string, std::string> flags;
  std::vector<std::string> addresses;
  std::string_view input(reinterpret_cast<const char*>(data), size);
  while (!input.empty()) {
    size_t end = input.find('\n');
    std::string_view line = input.substr(0, end);
    input.remove_prefix(end == std::string_view::npos ? input.size() : end + 1);
    if (!line.empty() && line.front() == '@') {
      addresses.emplace_back(line.substr(1));
      continue;
    }
    size_t eq = line.find('=');
    if (eq == std::string_view::npos) continue;
    std::string name(line.substr(0, eq));
    std::string value(line.substr(eq + 1));
    if (name == "SANDBOX_AUTH_TOKEN_FILE" || name == "--auth-token-file") {
      value = ConfinedTokenPath(value);
    }
    (name.rfind("--", 0) == 0 ? flags : env)[name] = value;
  }
  sandbox::cli::EnvLookup lookup = [&env](const std::string& name) -> std::optional<std::string> {
    auto found = env.find(name);
    if (found == env.end()) return std::nullopt;
    return found->second;
  };

  sandbox::cli::CheckedServeConfig checked = sandbox::cli::CheckServeConfig(lookup, flags);
  auto loaded = sandbox::cli::LoadServeConfig(lookup, flags);
  FUZZ_CHECK(loaded.has_value() == checked.errors.empty());
  if (!loaded) {
    FUZZ_CHECK(loaded.error().message == checked.errors.front());
    return 0;
  }
  sandbox::Limits limits = sandbox::cli::SessionLimits(*loaded);
  FUZZ_CHECK(limits.memory_bytes == loaded->memory_bytes);
  for (const auto& address : addresses) {
    sandbox::cli::ServeConfig config = *loaded;
    auto applied = sandbox::cli::ApplyHttpAddress(config, address);
    if (applied) FUZZ_CHECK(config.http_port >= 0 && config.http_port <= 65535);
  }
  return 0;
}
