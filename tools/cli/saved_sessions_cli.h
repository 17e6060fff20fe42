// The hibernated sessions of a state dir, for `mcp-sandbox sessions ls` and `sessions rm`
// (docs/sessions.md "Hibernate, resume, fork"): listed from their metadata, removed by id. Nothing
// here opens a saved archive.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace sandbox::cli {

// [{session_id, name, image, backend, saved_bytes, saved_at, created, mechanism}] plus
// {session_id, damaged: true} for those whose files do not check out.
nlohmann::json SavedSessionsJson(const std::string& state_dir);
// The table `sessions ls` prints under the live sandboxes; nothing when there are none.
void PrintSavedSessions(const std::string& state_dir);
// Deletes the saved state of each id; returns the exit code (1 if one was not found).
int RemoveSavedSessions(const std::string& state_dir, const std::vector<std::string>& ids);

}  // namespace sandbox::cli
