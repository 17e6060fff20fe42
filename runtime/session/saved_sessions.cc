#include "runtime/session/saved_sessions.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <memory>
#include <utility>

#include <nlohmann/json.hpp>
#include <openssl/evp.h>
#include <spdlog/spdlog.h>

#include "runtime/base/fd.h"
#include "runtime/base/files.h"
#include "runtime/session/session_id.h"

namespace sandbox {

namespace {

constexpr const char* kArchiveFile = "state.tar";
constexpr const char* kMetaFile = "meta.json";
constexpr int kMetaFormat = 1;
// meta.json is a few hundred bytes; a larger one was not written by us.
constexpr uint64_t kMaxMetaBytes = 1 << 20;
// Lines of a report kept (names of globals, files left out): enough for any real session.
constexpr size_t kMaxReportItems = 1000;
constexpr size_t kMaxReportText = 300;

std::string Sha256Hex(std::string_view data) {
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  if (!ctx || EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) != 1 ||
      EVP_DigestUpdate(ctx.get(), data.data(), data.size()) != 1 ||
      EVP_DigestFinal_ex(ctx.get(), digest, &length) != 1) {
    return "";
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(length * 2);
  for (unsigned int i = 0; i < length; ++i) {
    hex += kHex[digest[i] >> 4];
    hex += kHex[digest[i] & 15];
  }
  return hex;
}

int64_t Millis(std::chrono::system_clock::time_point at) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(at.time_since_epoch()).count();
}

// For the debug log's timings (tools/bench.d/hibernate.sh reads them).
int64_t MillisSince(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                               since)
      .count();
}

std::chrono::system_clock::time_point FromMillis(int64_t ms) {
  return std::chrono::system_clock::time_point(std::chrono::milliseconds(ms));
}

std::string Clip(std::string text) {
  if (text.size() > kMaxReportText) text.resize(kMaxReportText);
  return text;
}

nlohmann::json NotRestoredJson(const std::vector<NotRestored>& items) {
  auto array = nlohmann::json::array();
  for (const auto& item : items) {
    array.push_back({{"name", item.name}, {"type", item.type}, {"reason", item.reason}});
  }
  return array;
}

// Reads a [{name, type, reason}] array written by a sandbox (or by us from one): every field a
// string, clipped, at most kMaxReportItems.
std::vector<NotRestored> ReadNotRestored(const nlohmann::json& array) {
  std::vector<NotRestored> items;
  if (!array.is_array()) return items;
  for (const auto& item : array) {
    if (items.size() >= kMaxReportItems) break;
    if (!item.is_object()) continue;
    auto text = [&item](const char* key) {
      auto it = item.find(key);
      return it != item.end() && it->is_string() ? Clip(it->get<std::string>()) : std::string();
    };
    items.push_back(
        NotRestored{.name = text("name"), .type = text("type"), .reason = text("reason")});
  }
  return items;
}

// Opens `name` in `dir` as a regular file, refusing a symlink or anything else.
Result<Fd> OpenRegular(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    return Fail(errno == ENOENT ? ErrorCode::kNotFound : ErrorCode::kSandboxUnavailable, "{}: {}",
                path, std::strerror(errno));
  }
  Fd owned(fd);
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    return Fail(ErrorCode::kSandboxUnavailable, "{} is not a regular file", path);
  }
  return owned;
}

Result<std::string> ReadBounded(const std::string& path, uint64_t max_bytes) {
  SBX_ASSIGN_OR_RETURN(Fd fd, OpenRegular(path));
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) {
    return Fail(ErrorCode::kSandboxUnavailable, "{}: {}", path, std::strerror(errno));
  }
  if (static_cast<uint64_t>(st.st_size) > max_bytes) {
    return Fail(ErrorCode::kSandboxUnavailable, "{} is {} bytes, above the {} expected", path,
                st.st_size, max_bytes);
  }
  std::string content(static_cast<size_t>(st.st_size), '\0');
  size_t done = 0;
  while (done < content.size()) {
    ssize_t n = ::read(fd.get(), content.data() + done, content.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      return Fail(ErrorCode::kSandboxUnavailable, "{}: short read", path);
    }
    done += static_cast<size_t>(n);
  }
  return content;
}

Error DamagedError(const std::string& id, const std::string& what) {
  return MakeError(ErrorCode::kSandboxUnavailable,
                   "the saved state of session {} is damaged or was altered on disk ({}); it "
                   "cannot be resumed. Close it (sandbox_close_session) and create a new one",
                   id, what);
}

}  // namespace

SavedSessions::SavedSessions(SavedSessionsConfig config) : config_(std::move(config)) {
  if (auto made = MakeDirs(config_.dir, 0700); !made) {
    spdlog::warn("saved sessions: {}: {}", config_.dir, made.error().message);
  }
}

std::chrono::system_clock::time_point SavedSessions::Now() const {
  return config_.clock ? config_.clock() : std::chrono::system_clock::now();
}

std::string SavedSessions::DirOf(const std::string& id) const { return config_.dir + "/" + id; }

std::vector<std::string> SavedSessions::Ids() {
  std::vector<std::string> ids;
  DIR* dir = ::opendir(config_.dir.c_str());
  if (dir == nullptr) return ids;
  while (struct dirent* entry = ::readdir(dir)) {
    std::string name = entry->d_name;
    // Only names that are session ids: nothing else in this dir is ours to judge or delete.
    if (ParseSessionId(name)) ids.push_back(name);
  }
  ::closedir(dir);
  std::sort(ids.begin(), ids.end());
  return ids;
}

Status SavedSessions::Save(SavedSessionMeta meta, std::string_view archive, SaveKind kind,
                           const SavedBudget& budget) {
  if (!ParseSessionId(meta.id)) {
    return Fail(ErrorCode::kInvalidSessionId, "{} is not a session id", meta.id);
  }
  auto started = std::chrono::steady_clock::now();
  meta.size = archive.size();
  meta.sha256 = Sha256Hex(archive);
  std::lock_guard<std::mutex> lock(mutex_);
  // Room is made, or the save refused, by the budgets (saved_budget.h): never at another
  // subject's expense.
  SBX_ASSIGN_OR_RETURN(
      std::vector<std::string> evict,
      PlanSave(StoredLocked(), StoredSave{.id = meta.id, .owner = meta.owner, .size = meta.size},
               kind, budget, config_.max_total_bytes));
  for (const auto& id : evict) {
    spdlog::warn(
        "saved session {} evicted to make room for {} of the same owner (SANDBOX_SAVED_MAX_BYTES "
        "{} bytes, or the owner's SANDBOX_SUBJECT_* budget)",
        id, meta.id, config_.max_total_bytes);
    RemoveLocked(id);
  }
  meta.saved_at = Now();
  std::string dir = DirOf(meta.id);
  SBX_TRY(MakeDirs(dir, 0700));
  nlohmann::json json = {
      {"format", kMetaFormat},
      {"id", meta.id},
      {"name", meta.name},
      {"image", meta.image},
      {"backend", meta.backend},
      {"memory_bytes", meta.limits.memory_bytes},
      {"cpus", meta.limits.cpus},
      {"pids", meta.limits.pids},
      {"disk_bytes", meta.limits.disk_bytes},
      {"egress", meta.egress},
      {"created_ms", Millis(meta.created)},
      {"saved_ms", Millis(meta.saved_at)},
      {"size", meta.size},
      {"sha256", meta.sha256},
      {"mechanism", meta.mechanism},
      {"not_saved", NotRestoredJson(meta.not_saved)},
      {"owner", meta.owner},
  };
  // The archive first, then the metadata naming its digest: a crash in between leaves the old
  // metadata, whose digest no longer matches, which resume reports as damaged rather than
  // loading a mix.
  SBX_TRY(WriteFileAtomic(dir + "/" + kArchiveFile, archive, 0600));
  SBX_TRY(WriteFileAtomic(dir + "/" + kMetaFile, json.dump(), 0600));
  spdlog::debug("saved session {}: {} bytes stored (digest, eviction, written and synced) in {} ms",
                meta.id, meta.size, MillisSince(started));
  return {};
}

Result<SavedSessionMeta> SavedSessions::ReadMeta(const std::string& id) {
  std::string dir = DirOf(id);
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0) {
    return Fail(ErrorCode::kSessionNotFound, "session {} has no saved state", id);
  }
  if (!S_ISDIR(st.st_mode)) return Fail(DamagedError(id, dir + " is not a directory"));
  auto text = ReadBounded(dir + "/" + kMetaFile, kMaxMetaBytes);
  if (!text) return Fail(DamagedError(id, text.error().message));
  auto json = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (!json.is_object()) return Fail(DamagedError(id, "meta.json is not a JSON object"));
  try {
    if (json.at("format").get<int>() != kMetaFormat) {
      return Fail(DamagedError(id, "meta.json has an unknown format"));
    }
    SavedSessionMeta meta;
    meta.id = json.at("id").get<std::string>();
    if (meta.id != id) return Fail(DamagedError(id, "meta.json names another session"));
    meta.name = json.at("name").get<std::string>();
    meta.image = json.at("image").get<std::string>();
    meta.backend = json.at("backend").get<std::string>();
    meta.limits.memory_bytes = json.at("memory_bytes").get<uint64_t>();
    meta.limits.cpus = json.at("cpus").get<double>();
    meta.limits.pids = json.at("pids").get<uint32_t>();
    meta.limits.disk_bytes = json.at("disk_bytes").get<uint64_t>();
    meta.egress = json.at("egress").get<bool>();
    meta.created = FromMillis(json.at("created_ms").get<int64_t>());
    meta.saved_at = FromMillis(json.at("saved_ms").get<int64_t>());
    meta.size = json.at("size").get<uint64_t>();
    meta.sha256 = json.at("sha256").get<std::string>();
    meta.mechanism = json.at("mechanism").get<std::string>();
    meta.not_saved = ReadNotRestored(json.at("not_saved"));
    meta.owner = json.at("owner").get<std::string>();
    if (meta.sha256.size() != 64) return Fail(DamagedError(id, "meta.json has no valid digest"));
    return meta;
  } catch (const nlohmann::json::exception& e) {
    return Fail(DamagedError(id, std::string("meta.json: ") + e.what()));
  }
}

Result<SavedSessionMeta> SavedSessions::Meta(const std::string& id) {
  if (!ParseSessionId(id)) {
    return Fail(ErrorCode::kInvalidSessionId, "{} is not a session id", id);
  }
  std::lock_guard<std::mutex> lock(mutex_);
  SBX_ASSIGN_OR_RETURN(SavedSessionMeta meta, ReadMeta(id));
  if (Now() - meta.saved_at > config_.ttl) {
    spdlog::info("saved session {} expired (SANDBOX_SAVED_TTL)", id);
    RemoveLocked(id);
    return Fail(ErrorCode::kSessionNotFound,
                "session {} was hibernated longer than this server keeps saved sessions "
                "(SANDBOX_SAVED_TTL) and is gone; create a new one",
                id);
  }
  return meta;
}

Result<std::string> SavedSessions::LoadArchive(const SavedSessionMeta& meta) {
  auto started = std::chrono::steady_clock::now();
  std::lock_guard<std::mutex> lock(mutex_);
  auto archive = ReadBounded(DirOf(meta.id) + "/" + kArchiveFile, meta.size);
  if (!archive) return Fail(DamagedError(meta.id, archive.error().message));
  if (archive->size() != meta.size) {
    return Fail(DamagedError(meta.id, "state.tar is not the size that was saved"));
  }
  if (Sha256Hex(*archive) != meta.sha256) {
    return Fail(DamagedError(meta.id, "state.tar's SHA-256 differs from the one saved"));
  }
  spdlog::debug("saved session {}: {} bytes loaded and checked in {} ms", meta.id, meta.size,
                MillisSince(started));
  return archive;
}

bool SavedSessions::Contains(const std::string& id) {
  if (!ParseSessionId(id)) return false;
  struct stat st {};
  return ::lstat(DirOf(id).c_str(), &st) == 0;
}

bool SavedSessions::RemoveLocked(const std::string& id) {
  if (!ParseSessionId(id)) return false;
  struct stat st {};
  std::string dir = DirOf(id);
  if (::lstat(dir.c_str(), &st) != 0) return false;
  if (!S_ISDIR(st.st_mode)) return ::unlink(dir.c_str()) == 0;  // a planted link: the link only
  if (auto removed = RemoveTree(dir); !removed) {
    spdlog::warn("saved session {}: {}", id, removed.error().message);
    return false;
  }
  return true;
}

bool SavedSessions::Remove(const std::string& id) {
  std::lock_guard<std::mutex> lock(mutex_);
  return RemoveLocked(id);
}

Status SavedSessions::Copy(const std::string& from, const std::string& to,
                           const std::string& to_name, const SavedBudget& budget) {
  SBX_ASSIGN_OR_RETURN(SavedSessionMeta meta, Meta(from));
  SBX_ASSIGN_OR_RETURN(std::string archive, LoadArchive(meta));
  meta.id = to;
  meta.name = to_name;
  meta.created = Now();
  return Save(std::move(meta), archive, SaveKind::kCopy, budget);
}

std::vector<SavedSessionMeta> SavedSessions::List() {
  std::vector<SavedSessionMeta> metas;
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& id : Ids()) {
    if (auto meta = ReadMeta(id)) metas.push_back(std::move(*meta));
  }
  std::sort(metas.begin(), metas.end(),
            [](const auto& a, const auto& b) { return a.saved_at < b.saved_at; });
  return metas;
}

std::vector<StoredSave> SavedSessions::StoredLocked() {
  std::vector<std::pair<std::chrono::system_clock::time_point, StoredSave>> dated;
  for (const auto& id : Ids()) {
    if (auto meta = ReadMeta(id)) {
      dated.emplace_back(meta->saved_at,
                         StoredSave{.id = meta->id, .owner = meta->owner, .size = meta->size});
    }
  }
  std::stable_sort(dated.begin(), dated.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<StoredSave> stored;
  stored.reserve(dated.size());
  for (auto& [saved_at, save] : dated) stored.push_back(std::move(save));
  return stored;
}

SavedUsage SavedSessions::UsageOf(const std::string& owner) {
  std::lock_guard<std::mutex> lock(mutex_);
  return sandbox::UsageOf(StoredLocked(), owner);
}

std::vector<std::string> SavedSessions::Damaged() {
  std::vector<std::string> ids;
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& id : Ids()) {
    if (auto meta = ReadMeta(id); !meta && meta.error().code != ErrorCode::kSessionNotFound) {
      ids.push_back(id);
    }
  }
  return ids;
}

int SavedSessions::ExpireOld() {
  int expired = 0;
  auto now = Now();
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& id : Ids()) {
    auto meta = ReadMeta(id);
    if (meta && now - meta->saved_at > config_.ttl) {
      spdlog::info("saved session {} expired (saved {} bytes; SANDBOX_SAVED_TTL)", id, meta->size);
      if (RemoveLocked(id)) ++expired;
    }
  }
  return expired;
}

uint64_t SavedSessions::TotalBytes() {
  uint64_t total = 0;
  for (const auto& meta : List()) total += meta.size;
  return total;
}

namespace {

// The last non-empty line of a cell's stdout, parsed as a JSON object.
Result<nlohmann::json> LastJsonLine(std::string_view text, std::string_view what) {
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.remove_suffix(1);
  size_t start = text.rfind('\n');
  std::string_view line = start == std::string_view::npos ? text : text.substr(start + 1);
  auto json = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (!json.is_object()) {
    return Fail(ErrorCode::kSandboxUnavailable, "the {} printed no report", what);
  }
  return json;
}

std::vector<std::string> StringList(const nlohmann::json& json, const char* key) {
  std::vector<std::string> items;
  auto it = json.find(key);
  if (it == json.end() || !it->is_array()) return items;
  for (const auto& item : *it) {
    if (items.size() >= kMaxReportItems) break;
    if (item.is_string()) items.push_back(Clip(item.get<std::string>()));
  }
  return items;
}

std::string StringField(const nlohmann::json& json, const char* key) {
  auto it = json.find(key);
  return it != json.end() && it->is_string() ? Clip(it->get<std::string>()) : std::string();
}

}  // namespace

namespace {

// The two reports share one shape: a list of names kept, a list of what was not, a mechanism.
Result<RestoreReport> ParseReport(std::string_view stdout_text, const char* what,
                                  const char* kept_key, const char* missing_key) {
  SBX_ASSIGN_OR_RETURN(nlohmann::json json, LastJsonLine(stdout_text, what));
  RestoreReport report;
  report.restored = StringList(json, kept_key);
  if (auto it = json.find(missing_key); it != json.end()) {
    report.not_restored = ReadNotRestored(*it);
  }
  report.mechanism = StringField(json, "mechanism");
  return report;
}

}  // namespace

Result<RestoreReport> ParseRestoreReport(std::string_view stdout_text) {
  return ParseReport(stdout_text, "restore", "restored", "not_restored");
}

Result<RestoreReport> ParseSaveReport(std::string_view stdout_text) {
  return ParseReport(stdout_text, "save", "saved", "skipped");
}

}  // namespace sandbox
