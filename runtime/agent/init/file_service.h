// FileService: the agent protocol's file requests (runtime/agent/PROTOCOL.md: write_open,
// write_chunk, write_commit, write_abort, read_file, stat, list) answered over FileOps. Each
// request gets exactly one answer, returned rather than sent, so the service holds no fd and is
// tested without a stream; Agent routes the requests here and sends what comes back.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "runtime/agent/init/file_ops.h"
#include "runtime/agent/wire.h"

namespace sandbox::agent {

class FileService {
 public:
  // Both directories absolute and free of symlinks (init passes their realpath).
  FileService(std::string data_dir, std::string tmp_dir);

  // Whether `type` is one of the file requests.
  static bool Handles(std::string_view type);
  // The answer to request `id` of `type` (one Handles() accepts): "ok", "file" (with the
  // content as its payload), "info", "entries" or "error". A write_chunk's content is the
  // request's payload.
  Message Handle(uint64_t id, std::string_view type, const Message& request);

  const FileOps& files() const { return files_; }

 private:
  Json WriteOpen(uint64_t id, const Json& request);
  Json WriteChunk(uint64_t id, const Message& request);
  Json WriteCommit(uint64_t id, const Json& request);
  Json WriteAbort(uint64_t id, const Json& request);
  Message ReadFile(uint64_t id, const Json& request);
  Json Stat(uint64_t id, const Json& request);
  Json List(uint64_t id, const Json& request);
  // The upload a write_chunk/commit/abort names, or nullptr when it is not the one in progress.
  PendingWrite* FindWrite(uint64_t write_id);

  FileOps files_;
  // The upload in progress (at most one: the host sends one request at a time), named by the
  // id of its write_open. Dropping it removes its file, also when init exits.
  uint64_t write_id_ = 0;
  std::optional<PendingWrite> write_;
};

// The protocol's error answer to request `id`.
Json ErrorAnswer(uint64_t id, const Error& error);

}  // namespace sandbox::agent
