#include "tools/cli/saved_sessions_cli.h"

#include <sys/stat.h>

#include <cstdio>
#include <iostream>
#include <memory>

#include "runtime/base/time_format.h"
#include "runtime/base/units.h"
#include "runtime/session/saved_sessions.h"
#include "tools/cli/args.h"

namespace sandbox::cli {
namespace {

// The store of saved sessions, or null when the state dir has none (nothing is created).
std::unique_ptr<SavedSessions> Open(const std::string& state_dir) {
  std::string dir = state_dir + "/hibernated";
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return nullptr;
  // The TTL is the server's business (SANDBOX_SAVED_TTL): listing and removing expire nothing.
  return std::make_unique<SavedSessions>(
      SavedSessionsConfig{.dir = dir,
                          .max_total_bytes = ~0ull,
                          .ttl = std::chrono::hours(24 * 365 * 100),
                          .clock = {}});
}

}  // namespace

nlohmann::json SavedSessionsJson(const std::string& state_dir) {
  nlohmann::json out = nlohmann::json::array();
  auto saved = Open(state_dir);
  if (!saved) return out;
  for (const auto& meta : saved->List()) {
    out.push_back({{"session_id", meta.id},
                   {"name", meta.name},
                   {"image", meta.image},
                   {"backend", meta.backend},
                   {"saved_bytes", meta.size},
                   {"saved_at", Rfc3339Utc(std::chrono::system_clock::to_time_t(meta.saved_at))},
                   {"created", Rfc3339Utc(std::chrono::system_clock::to_time_t(meta.created))},
                   {"mechanism", meta.mechanism}});
  }
  for (const auto& id : saved->Damaged()) out.push_back({{"session_id", id}, {"damaged", true}});
  return out;
}

void PrintSavedSessions(const std::string& state_dir) {
  auto saved = Open(state_dir);
  if (!saved) return;
  auto metas = saved->List();
  auto damaged = saved->Damaged();
  if (metas.empty() && damaged.empty()) return;
  std::printf("\nhibernated sessions in %s/hibernated:\n", state_dir.c_str());
  std::printf("%-40s %-10s %-24s %s\n", "SESSION", "SAVED", "SAVED AT", "NAME");
  for (const auto& meta : metas) {
    std::printf("%-40s %-10s %-24s %s\n", meta.id.c_str(), FormatBytes(meta.size).c_str(),
                Rfc3339Utc(std::chrono::system_clock::to_time_t(meta.saved_at)).c_str(),
                meta.name.c_str());
  }
  for (const auto& id : damaged) {
    std::printf("%-40s %-10s %-24s %s\n", id.c_str(), "?", "?",
                "(damaged: sessions rm removes it)");
  }
}

int RemoveSavedSessions(const std::string& state_dir, const std::vector<std::string>& ids) {
  auto saved = Open(state_dir);
  int status = kExitOk;
  for (const auto& id : ids) {
    if (saved && saved->Remove(id)) {
      std::cout << "removed " << id << "\n";
    } else {
      std::cerr << "mcp-sandbox sessions rm: no hibernated session " << id << " in " << state_dir
                << "\n";
      status = kExitFailure;
    }
  }
  return status;
}

}  // namespace sandbox::cli
