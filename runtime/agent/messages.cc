#include "runtime/agent/messages.h"

namespace sandbox::agent {

Json Hello::ToJson() const {
  return Json{{"type", "hello"},          {"id", 0},
              {"protocol", protocol},     {"init_pid", init_pid},
              {"worker_pid", worker_pid}, {"python", python},
              {"data_dir", data_dir},     {"tmp_dir", tmp_dir}};
}

Hello Hello::FromJson(const Json& message) {
  return Hello{.protocol = static_cast<int>(GetInt(message, "protocol")),
               .init_pid = static_cast<int>(GetInt(message, "init_pid")),
               .worker_pid = static_cast<int>(GetInt(message, "worker_pid")),
               .python = GetString(message, "python"),
               .data_dir = GetString(message, "data_dir"),
               .tmp_dir = GetString(message, "tmp_dir")};
}

Json ReadFileRequest::ToJson(uint64_t id) const {
  return Json{{"type", "read_file"},    {"id", id},         {"path", path},
              {"max_bytes", max_bytes}, {"offset", offset}, {"length", length}};
}

ReadFileRequest ReadFileRequest::FromJson(const Json& message) {
  return ReadFileRequest{.path = GetString(message, "path"),
                         // A request without a cap gets a small one, never none.
                         .max_bytes = GetUint(message, "max_bytes", uint64_t{50} << 20),
                         .offset = GetUint(message, "offset"),
                         .length = GetUint(message, "length", kFileChunkBytes)};
}

Json FileAnswer::ToJson(uint64_t id) const {
  return Json{{"type", "file"}, {"id", id},   {"size", size},
              {"eof", eof},     {"dev", dev}, {"ino", ino}};
}

FileAnswer FileAnswer::FromJson(const Json& message) {
  return FileAnswer{.size = GetUint(message, "size"),
                    .eof = GetBool(message, "eof"),
                    .dev = GetUint(message, "dev"),
                    .ino = GetUint(message, "ino")};
}

Json WriteOpenRequest::ToJson(uint64_t id) const {
  return Json{
      {"type", "write_open"}, {"id", id}, {"path", path}, {"overwrite", overwrite}, {"mode", mode}};
}

WriteOpenRequest WriteOpenRequest::FromJson(const Json& message) {
  return WriteOpenRequest{.path = GetString(message, "path"),
                          .overwrite = GetBool(message, "overwrite", true),
                          .mode = static_cast<uint32_t>(GetUint(message, "mode", 0644))};
}

Json WriteChunkRequest::ToJson(uint64_t id) const {
  return Json{{"type", "write_chunk"}, {"id", id}, {"write", write}};
}

WriteChunkRequest WriteChunkRequest::FromJson(const Json& message) {
  return WriteChunkRequest{.write = GetUint(message, "write")};
}

Json WriteCommitRequest::ToJson(uint64_t id) const {
  return Json{{"type", "write_commit"}, {"id", id}, {"write", write}};
}

WriteCommitRequest WriteCommitRequest::FromJson(const Json& message) {
  return WriteCommitRequest{.write = GetUint(message, "write")};
}

Json WriteAbortRequest::ToJson(uint64_t id) const {
  return Json{{"type", "write_abort"}, {"id", id}, {"write", write}};
}

WriteAbortRequest WriteAbortRequest::FromJson(const Json& message) {
  return WriteAbortRequest{.write = GetUint(message, "write")};
}

Json OkAnswer::ToJson(uint64_t id) const {
  Json answer{{"type", "ok"}, {"id", id}};
  if (size) answer["size"] = *size;
  return answer;
}

OkAnswer OkAnswer::FromJson(const Json& message) {
  OkAnswer answer{.size = std::nullopt};
  if (message.is_object() && message.contains("size")) answer.size = GetUint(message, "size");
  return answer;
}

Json EntryMessage::ToJson(bool with_is_dir) const {
  Json json{{"path", path}, {"size", size}, {"mime", mime}, {"mtime_ms", mtime_ms}};
  if (with_is_dir) json["is_dir"] = is_dir;
  return json;
}

EntryMessage EntryMessage::FromJson(const Json& entry) {
  return EntryMessage{.path = GetString(entry, "path"),
                      .size = GetUint(entry, "size"),
                      .mime = GetString(entry, "mime"),
                      .mtime_ms = GetInt(entry, "mtime_ms"),
                      .is_dir = GetBool(entry, "is_dir")};
}

Json StatRequest::ToJson(uint64_t id) const {
  return Json{{"type", "stat"}, {"id", id}, {"path", path}};
}

StatRequest StatRequest::FromJson(const Json& message) {
  return StatRequest{.path = GetString(message, "path")};
}

Json InfoAnswer::ToJson(uint64_t id) const {
  return Json{{"type", "info"}, {"id", id}, {"entry", entry.ToJson()}};
}

std::optional<InfoAnswer> InfoAnswer::FromJson(const Json& message) {
  auto it = message.find("entry");
  if (it == message.end() || !it->is_object()) return std::nullopt;
  return InfoAnswer{.entry = EntryMessage::FromJson(*it)};
}

Json ListRequest::ToJson(uint64_t id) const {
  return Json{{"type", "list"}, {"id", id}, {"path", path}, {"recursive", recursive}};
}

ListRequest ListRequest::FromJson(const Json& message) {
  return ListRequest{.path = GetString(message, "path"),
                     .recursive = GetBool(message, "recursive")};
}

Json EntriesAnswer::ToJson(uint64_t id) const {
  Json list = Json::array();
  for (const auto& entry : entries) list.push_back(entry.ToJson());
  return Json{
      {"type", "entries"}, {"id", id}, {"entries", std::move(list)}, {"truncated", truncated}};
}

EntriesAnswer EntriesAnswer::FromJson(const Json& message) {
  EntriesAnswer answer{.entries = {}, .truncated = GetBool(message, "truncated")};
  if (auto it = message.find("entries"); it != message.end() && it->is_array()) {
    for (const auto& entry : *it) answer.entries.push_back(EntryMessage::FromJson(entry));
  }
  return answer;
}

Json WarmRequest::ToJson(uint64_t id) const { return Json{{"type", "warm"}, {"id", id}}; }

Json WarmAnswer::ToJson(uint64_t id) const {
  return Json{{"type", "warm"}, {"id", id}, {"imported", imported}, {"failed", failed}};
}

WarmAnswer WarmAnswer::FromJson(const Json& message) {
  return WarmAnswer{.imported = GetStrings(message, "imported"),
                    .failed = GetStrings(message, "failed")};
}

Json PreloadRequest::ToJson(uint64_t id) const { return Json{{"type", "preload"}, {"id", id}}; }

Json ShutdownRequest::ToJson(uint64_t id) const { return Json{{"type", "shutdown"}, {"id", id}}; }

Json ErrorMessage::ToJson(uint64_t id) const {
  return Json{{"type", "error"}, {"id", id}, {"code", code}, {"message", message}};
}

ErrorMessage ErrorMessage::FromJson(const Json& json) {
  return ErrorMessage{.code = GetString(json, "code"), .message = GetString(json, "message")};
}

}  // namespace sandbox::agent
