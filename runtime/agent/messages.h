// The agent protocol's messages (runtime/agent/PROTOCOL.md) as typed structs, shared by init
// and the host client, so each message's fields are spelled in one place. One struct per
// message: ToJson gives the whole message (its `type` and the request's `id` included), FromJson
// reads one that never throws: a missing field or one of another type gives the default, as the
// Get* readers of wire.h do. File content is not here: it is the message's payload (wire.h's
// Message), a binary frame after the JSON.
// The run's messages (run, output, result, cancel) are in run_messages.h.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "runtime/agent/wire.h"

namespace sandbox::agent {

// init → host, once the persistent Python worker is ready (id 0).
struct Hello {
  int protocol = 0;
  int init_pid = 0;
  int worker_pid = 0;
  std::string python;  // "3.11.2"
  std::string data_dir;
  std::string tmp_dir;

  Json ToJson() const;
  static Hello FromJson(const Json& message);
};

// host → init: one chunk of a file, `length` bytes from `offset`, refused above `max_bytes`.
struct ReadFileRequest {
  std::string path;
  uint64_t max_bytes = 0;
  uint64_t offset = 0;
  uint64_t length = 0;

  Json ToJson(uint64_t id) const;
  static ReadFileRequest FromJson(const Json& message);
};

// init → host, the answer to read_file; the chunk is the payload.
struct FileAnswer {
  uint64_t size = 0;  // the file's size when the chunk was read
  bool eof = false;
  uint64_t dev = 0;  // the file's identity, so the host tells a file replaced between chunks
  uint64_t ino = 0;

  Json ToJson(uint64_t id) const;
  static FileAnswer FromJson(const Json& message);
};

// host → init: opens a write; the request's id names it.
struct WriteOpenRequest {
  std::string path;
  bool overwrite = true;
  uint32_t mode = 0644;

  Json ToJson(uint64_t id) const;
  static WriteOpenRequest FromJson(const Json& message);
};

// host → init: write_chunk (its content is the payload), write_commit and write_abort name the
// write by the id of its write_open.
struct WriteChunkRequest {
  uint64_t write = 0;

  Json ToJson(uint64_t id) const;
  static WriteChunkRequest FromJson(const Json& message);
};
struct WriteCommitRequest {
  uint64_t write = 0;

  Json ToJson(uint64_t id) const;
  static WriteCommitRequest FromJson(const Json& message);
};
struct WriteAbortRequest {
  uint64_t write = 0;

  Json ToJson(uint64_t id) const;
  static WriteAbortRequest FromJson(const Json& message);
};

// init → host: `ok` to write_open, write_chunk, write_abort and shutdown; to write_commit with
// the size written.
struct OkAnswer {
  std::optional<uint64_t> size;  // write_commit's only

  Json ToJson(uint64_t id) const;
  static OkAnswer FromJson(const Json& message);
};

// A file or directory as `info`, `entries` and a result's `artifacts` give it: an absolute
// path; `mime` is empty for a directory.
struct EntryMessage {
  std::string path;
  uint64_t size = 0;
  std::string mime;
  int64_t mtime_ms = 0;
  bool is_dir = false;

  // Artifacts go without `is_dir` (they are always files).
  Json ToJson(bool with_is_dir = true) const;
  static EntryMessage FromJson(const Json& entry);
};

// host → init: one entry's facts; answered by `info`.
struct StatRequest {
  std::string path;

  Json ToJson(uint64_t id) const;
  static StatRequest FromJson(const Json& message);
};
struct InfoAnswer {
  EntryMessage entry;

  Json ToJson(uint64_t id) const;
  // nullopt when `entry` is missing or no object.
  static std::optional<InfoAnswer> FromJson(const Json& message);
};

// host → init: a directory's entries (at most 20000); answered by `entries`.
struct ListRequest {
  std::string path;
  bool recursive = false;

  Json ToJson(uint64_t id) const;
  static ListRequest FromJson(const Json& message);
};
struct EntriesAnswer {
  std::vector<EntryMessage> entries;
  bool truncated = false;

  Json ToJson(uint64_t id) const;
  static EntriesAnswer FromJson(const Json& message);
};

// host → init: answered by `warm` once the persistent worker has the preload.
struct WarmRequest {
  Json ToJson(uint64_t id) const;
};
struct WarmAnswer {
  std::vector<std::string> imported;
  std::vector<std::string> failed;  // one line per module left out

  Json ToJson(uint64_t id) const;
  static WarmAnswer FromJson(const Json& message);
};

// host → init, a notification (no answer): start the zygote of a session started cold.
struct PreloadRequest {
  Json ToJson(uint64_t id) const;
};

// host → init: answered by `ok`, then init exits.
struct ShutdownRequest {
  Json ToJson(uint64_t id) const;
};

// init → host: the answer to any request that failed (id 0: init cannot serve, and exits).
struct ErrorMessage {
  std::string code;  // a DESIGN.md error name ("not_found")
  std::string message;

  Json ToJson(uint64_t id) const;
  static ErrorMessage FromJson(const Json& message);
};

}  // namespace sandbox::agent
