#include "runtime/agent/init/file_service.h"

#include <algorithm>
#include <array>
#include <utility>

#include "runtime/agent/messages.h"
#include "runtime/agent/mime.h"

namespace sandbox::agent {

namespace {

// The largest chunk one read_file answer carries. init holds it twice while it sends it (read,
// then framed), inside the sandbox's memory limit.
constexpr uint64_t kMaxReadChunk = kFileChunkBytes;
constexpr size_t kMaxListEntries = 20000;

EntryMessage EntryOf(const FileEntry& entry) {
  return EntryMessage{
      .path = entry.path,
      .size = entry.size,
      .mime = entry.is_dir ? std::string() : std::string(MimeTypeForPath(entry.path)),
      .mtime_ms = entry.mtime_ms,
      .is_dir = entry.is_dir};
}

Json Ok(uint64_t id) { return OkAnswer{.size = std::nullopt}.ToJson(id); }

}  // namespace

Json ErrorAnswer(uint64_t id, const Error& error) {
  return ErrorMessage{.code = std::string(ErrorCodeName(error.code)), .message = error.message}
      .ToJson(id);
}

FileService::FileService(std::string data_dir, std::string tmp_dir)
    : files_(std::move(data_dir), std::move(tmp_dir)) {}

bool FileService::Handles(std::string_view type) {
  static constexpr std::array<std::string_view, 7> kTypes = {
      "write_open", "write_chunk", "write_commit", "write_abort", "read_file", "stat", "list"};
  return std::find(kTypes.begin(), kTypes.end(), type) != kTypes.end();
}

Message FileService::Handle(uint64_t id, std::string_view type, const Message& request) {
  auto answer = [](Json json) { return Message{std::move(json), {}}; };
  if (type == "write_open") return answer(WriteOpen(id, request.json));
  if (type == "write_chunk") return answer(WriteChunk(id, request));
  if (type == "write_commit") return answer(WriteCommit(id, request.json));
  if (type == "write_abort") return answer(WriteAbort(id, request.json));
  if (type == "read_file") return ReadFile(id, request.json);
  if (type == "stat") return answer(Stat(id, request.json));
  if (type == "list") return answer(List(id, request.json));
  return answer(ErrorAnswer(id, MakeError(ErrorCode::kInvalidArgument, "not a file request")));
}

Json FileService::WriteOpen(uint64_t id, const Json& request) {
  write_.reset();  // a write the host abandoned: its file goes
  auto open = WriteOpenRequest::FromJson(request);
  auto write = files_.BeginWrite(open.path, open.overwrite, open.mode);
  if (!write) return ErrorAnswer(id, write.error());
  write_.emplace(std::move(*write));
  write_id_ = id;
  return Ok(id);
}

PendingWrite* FileService::FindWrite(uint64_t write_id) {
  if (!write_ || write_id != write_id_) return nullptr;
  return &*write_;
}

Json FileService::WriteChunk(uint64_t id, const Message& request) {
  auto chunk = WriteChunkRequest::FromJson(request.json);
  PendingWrite* write = FindWrite(chunk.write);
  if (write == nullptr) {
    return ErrorAnswer(
        id, MakeError(ErrorCode::kInvalidArgument, "no write {} in progress", chunk.write));
  }
  // The content is the payload; a chunk without one is a sender of another protocol version
  // (content in base64), whose file would come out empty: refused, and the write with it.
  Status appended =
      request.json.contains(kPayloadField)
          ? write->Append(request.payload)
          : Status(Fail(ErrorCode::kInvalidArgument, "write_chunk without its content"));
  if (!appended) {
    write_.reset();
    return ErrorAnswer(id, appended.error());
  }
  return Ok(id);
}

Json FileService::WriteCommit(uint64_t id, const Json& request) {
  auto commit = WriteCommitRequest::FromJson(request);
  PendingWrite* write = FindWrite(commit.write);
  if (write == nullptr) {
    return ErrorAnswer(
        id, MakeError(ErrorCode::kInvalidArgument, "no write {} in progress", commit.write));
  }
  Status committed = write->Commit();
  uint64_t size = write->written();
  write_.reset();
  if (!committed) return ErrorAnswer(id, committed.error());
  return OkAnswer{.size = size}.ToJson(id);
}

Json FileService::WriteAbort(uint64_t id, const Json& request) {
  if (FindWrite(WriteAbortRequest::FromJson(request).write) != nullptr) write_.reset();
  return Ok(id);
}

Message FileService::ReadFile(uint64_t id, const Json& request) {
  auto read = ReadFileRequest::FromJson(request);
  auto chunk =
      files_.ReadChunk(read.path, read.offset,
                       static_cast<size_t>(std::min(read.length, kMaxReadChunk)), read.max_bytes);
  if (!chunk) return Message{ErrorAnswer(id, chunk.error()), {}};
  return Message{
      FileAnswer{.size = chunk->size, .eof = chunk->eof, .dev = chunk->device, .ino = chunk->inode}
          .ToJson(id),
      std::move(chunk->content)};
}

Json FileService::Stat(uint64_t id, const Json& request) {
  auto entry = files_.Stat(StatRequest::FromJson(request).path);
  if (!entry) return ErrorAnswer(id, entry.error());
  return InfoAnswer{.entry = EntryOf(*entry)}.ToJson(id);
}

Json FileService::List(uint64_t id, const Json& request) {
  auto asked = ListRequest::FromJson(request);
  auto listing = files_.List(asked.path, asked.recursive, kMaxListEntries);
  if (!listing) return ErrorAnswer(id, listing.error());
  EntriesAnswer answer{.entries = {}, .truncated = listing->truncated};
  for (const auto& entry : listing->entries) answer.entries.push_back(EntryOf(entry));
  return answer.ToJson(id);
}

}  // namespace sandbox::agent
