// The agent protocol's messages (runtime/agent/PROTOCOL.md) as typed structs, shared by init
// and the host client, so each message's fields are spelled in one place. One struct per
// message: ToJson gives the whole message (its `type` and the request's `id` included), FromJson
// reads one that never throws: a missing field or one of another type gives the default, as the
// Get* readers of wire.h do. File content is not here: it is the message's payload (wire.h's
// Message), a binary frame after the JSON.
// So far the hello and the file transfer's messages (read_file, write_*); the others are still
// built and read field by field where they are used.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

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

}  // namespace sandbox::agent
