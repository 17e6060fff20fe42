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

}  // namespace sandbox::agent
