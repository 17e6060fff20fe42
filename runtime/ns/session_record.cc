#include "runtime/ns/session_record.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "runtime/base/files.h"
#include "runtime/base/json_parse.h"

namespace sandbox::ns {

std::string RecordToJson(const SessionRecord& record) {
  nlohmann::json json = {
      {"backend", "namespace"},          {"session_id", record.session_id},
      {"pid", record.init.pid},          {"start_time", record.init.start_time},
      {"server_pid", record.server.pid}, {"server_start_time", record.server.start_time},
      {"host_uid", record.host_uid},     {"host_uid_claimed", record.host_uid_claimed},
      {"cgroups", record.cgroups},       {"rootfs", record.rootfs},
  };
  return json.dump(2) + "\n";
}

std::optional<SessionRecord> RecordFromJson(const std::string& text) {
  // nlohmann reports type errors with exceptions; they stay inside this function.
  try {
    // The record is a file in the state dir: bounded like every other JSON read from outside.
    auto parsed = ParseJsonBounded(text);
    if (!parsed) return std::nullopt;
    const nlohmann::json& json = *parsed;
    SessionRecord record;
    record.session_id = json.at("session_id").get<std::string>();
    record.init.pid = json.at("pid").get<pid_t>();
    record.init.start_time = json.at("start_time").get<uint64_t>();
    record.server.pid = json.at("server_pid").get<pid_t>();
    record.server.start_time = json.at("server_start_time").get<uint64_t>();
    record.host_uid = json.at("host_uid").get<uint32_t>();
    record.host_uid_claimed = json.value("host_uid_claimed", false);
    record.cgroups = json.value("cgroups", std::vector<std::string>{});
    record.rootfs = json.value("rootfs", std::string());
    return record;
  } catch (const nlohmann::json::exception&) {
    return std::nullopt;
  }
}

SessionRecords::SessionRecords(std::string dir) : dir_(std::move(dir)) {}

std::string SessionRecords::PathFor(const std::string& session_id) const {
  return dir_ + "/" + session_id + ".json";
}

Status SessionRecords::Write(const SessionRecord& record) {
  SBX_TRY(MakeDirs(dir_, 0700));
  std::string path = PathFor(record.session_id);
  std::string tmp = path + ".tmp";
  SBX_TRY(WriteFile(tmp, RecordToJson(record), 0600));
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    return FailSys("rename", path, err);
  }
  return {};
}

void SessionRecords::Remove(const std::string& session_id) {
  ::unlink(PathFor(session_id).c_str());
}

std::optional<SessionRecord> SessionRecords::Read(const std::string& session_id) const {
  Result<std::string> text = ReadFile(PathFor(session_id));
  if (!text) return std::nullopt;
  return RecordFromJson(*text);
}

std::vector<SessionRecord> SessionRecords::ReadAll() const {
  std::vector<SessionRecord> records;
  DIR* dir = ::opendir(dir_.c_str());
  if (dir == nullptr) return records;
  while (dirent* entry = ::readdir(dir)) {
    std::string name = entry->d_name;
    if (name.size() <= 5 || name.compare(name.size() - 5, 5, ".json") != 0) continue;
    Result<std::string> text = ReadFile(dir_ + "/" + name);
    if (!text) {
      spdlog::warn("session record {}: {}", name, text.error().message);
      continue;
    }
    std::optional<SessionRecord> record = RecordFromJson(*text);
    if (!record) {
      spdlog::warn("session record {}/{}: not a namespace session record", dir_, name);
      continue;
    }
    records.push_back(std::move(*record));
  }
  ::closedir(dir);
  return records;
}

std::vector<std::string> SessionRecords::RunningFrom(const std::string& rootfs) const {
  std::vector<std::string> ids;
  // Same directory, however the path was spelled (a state dir given with a trailing slash, a
  // symlink): compared by device and inode.
  struct stat wanted {};
  if (::stat(rootfs.c_str(), &wanted) != 0) return ids;
  for (const SessionRecord& record : ReadAll()) {
    struct stat st {};
    if (record.rootfs.empty() || ::stat(record.rootfs.c_str(), &st) != 0) continue;
    if (st.st_dev != wanted.st_dev || st.st_ino != wanted.st_ino) continue;
    // No init yet: being spawned by a live server.
    if (record.init.IsAlive() || (record.init.pid == 0 && record.server.IsAlive())) {
      ids.push_back(record.session_id);
    }
  }
  std::sort(ids.begin(), ids.end());
  return ids;
}

}  // namespace sandbox::ns
