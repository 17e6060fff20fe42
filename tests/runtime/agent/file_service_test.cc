// init's file service (the protocol's write_*, read_file, stat and list requests), called
// directly: one answer per request, its id echoed, errors as answers and never a crash.
#include "runtime/agent/init/file_service.h"

#include <catch2/catch.hpp>

#include "runtime/base/files.h"
#include "tests/support/test_support.h"

namespace file_service_test {

using sandbox::agent::FileService;
using sandbox::agent::Json;
using sandbox::testing::TempDir;

namespace {

struct ServiceFixture {
  ServiceFixture() {
    REQUIRE(sandbox::MakeDirs(dir.Join("data")));
    REQUIRE(sandbox::MakeDirs(dir.Join("tmp")));
    service.emplace(dir.Join("data"), dir.Join("tmp"));
  }
  // The answer's JSON; its payload (read_file's content) is kept in `payload`.
  Json Ask(uint64_t id, const std::string& type, Json request = Json::object(),
           std::string request_payload = {}) {
    request["id"] = id;
    request["type"] = type;
    // As the decoder hands it over: the message announced its payload.
    if (!request_payload.empty()) request[sandbox::agent::kPayloadField] = request_payload.size();
    sandbox::agent::Message answer =
        service->Handle(id, type, {std::move(request), std::move(request_payload)});
    CHECK(answer.json["id"] == id);
    payload = std::move(answer.payload);
    return answer.json;
  }
  TempDir dir;
  std::optional<FileService> service;
  std::string payload;
};

}  // namespace

TEST_CASE("file service: the file requests, and nothing else, are its", "[unit]") {
  for (const char* type :
       {"write_open", "write_chunk", "write_commit", "write_abort", "read_file", "stat", "list"}) {
    CHECK(FileService::Handles(type));
  }
  for (const char* type : {"run", "cancel", "warm", "shutdown", "", "write"}) {
    CHECK_FALSE(FileService::Handles(type));
  }
}

TEST_CASE("file service: an upload in chunks, committed, then read back, listed and stat'ed",
          "[unit]") {
  ServiceFixture f;
  CHECK(f.Ask(1, "write_open", {{"path", "sub/data.csv"}, {"mode", 0600}})["type"] == "ok");
  // The content of a chunk is the request's payload (a binary frame on the wire).
  CHECK(f.Ask(2, "write_chunk", {{"write", 1}}, "a,b\n")["type"] == "ok");
  CHECK(f.Ask(3, "write_chunk", {{"write", 1}}, "1,2\n")["type"] == "ok");
  // Not there until committed.
  CHECK(f.Ask(4, "stat", {{"path", "sub/data.csv"}})["type"] == "error");
  Json committed = f.Ask(5, "write_commit", {{"write", 1}});
  CHECK(committed["type"] == "ok");
  CHECK(committed["size"] == 8);

  Json read = f.Ask(6, "read_file", {{"path", "sub/data.csv"}});
  REQUIRE(read["type"] == "file");
  CHECK(f.payload == "a,b\n1,2\n");
  CHECK_FALSE(read.contains("content"));  // not in the JSON: the payload carries it
  CHECK(read["eof"] == true);
  Json part = f.Ask(7, "read_file", {{"path", "sub/data.csv"}, {"offset", 4}, {"length", 2}});
  CHECK(f.payload == "1,");
  CHECK(part["eof"] == false);

  Json info = f.Ask(8, "stat", {{"path", "sub/data.csv"}});
  REQUIRE(info["type"] == "info");
  CHECK(info["entry"]["size"] == 8);
  CHECK(info["entry"]["mime"] == "text/csv");
  Json listed = f.Ask(9, "list", {{"path", ""}, {"recursive", true}});
  REQUIRE(listed["type"] == "entries");
  CHECK(listed["entries"].size() == 2);  // sub/ and sub/data.csv
  CHECK(listed["truncated"] == false);

  // A length above the chunk limit is cut to it, not refused.
  std::string big(sandbox::agent::kFileChunkBytes + 10, 'x');
  REQUIRE(f.Ask(10, "write_open", {{"path", "big.bin"}})["type"] == "ok");
  REQUIRE(f.Ask(11, "write_chunk", {{"write", 10}}, big)["type"] == "ok");
  REQUIRE(f.Ask(12, "write_commit", {{"write", 10}})["type"] == "ok");
  Json first = f.Ask(13, "read_file", {{"path", "big.bin"}, {"length", big.size()}});
  CHECK(f.payload.size() == sandbox::agent::kFileChunkBytes);
  CHECK(first["eof"] == false);
}

TEST_CASE("file service: chunks for another write, an abort, and a write opened anew", "[unit]") {
  ServiceFixture f;
  Json stray = f.Ask(1, "write_chunk", {{"write", 7}}, "x");
  CHECK(stray["type"] == "error");
  CHECK(stray["code"] == "invalid_argument");
  CHECK(f.Ask(2, "write_commit", {{"write", 7}})["type"] == "error");

  REQUIRE(f.Ask(3, "write_open", {{"path", "a.txt"}})["type"] == "ok");
  REQUIRE(f.Ask(4, "write_chunk", {{"write", 3}}, "x")["type"] == "ok");
  CHECK(f.Ask(5, "write_chunk", {{"write", 4}})["type"] == "error");
  CHECK(f.Ask(6, "write_abort", {{"write", 3}})["type"] == "ok");
  CHECK(f.Ask(7, "write_commit", {{"write", 3}})["type"] == "error");  // gone with the abort
  CHECK(f.Ask(8, "stat", {{"path", "a.txt"}})["type"] == "error");

  // A second write_open abandons the first: its file never appears.
  REQUIRE(f.Ask(9, "write_open", {{"path", "b.txt"}})["type"] == "ok");
  REQUIRE(f.Ask(10, "write_open", {{"path", "c.txt"}})["type"] == "ok");
  CHECK(f.Ask(11, "write_commit", {{"write", 9}})["type"] == "error");
  CHECK(f.Ask(12, "write_commit", {{"write", 10}})["type"] == "ok");
  CHECK(f.Ask(13, "stat", {{"path", "b.txt"}})["type"] == "error");
  CHECK(f.Ask(14, "stat", {{"path", "c.txt"}})["type"] == "info");
}

TEST_CASE("file service: hostile requests are answered with errors", "[unit]") {
  ServiceFixture f;
  // Reads see the sandbox as its code does; writes stay inside /mnt/data and /tmp.
  Json directory = f.Ask(1, "read_file", {{"path", ""}});
  CHECK(directory["type"] == "error");
  CHECK(directory["code"] == "invalid_path");
  Json outside = f.Ask(2, "write_open", {{"path", "../../escape"}});
  CHECK(outside["type"] == "error");
  CHECK(outside["code"] == "invalid_path");
  CHECK(f.Ask(2, "read_file", {{"path", "missing.csv"}})["code"] == "not_found");
  // Fields of the wrong type read as absent.
  CHECK(f.Ask(6, "stat", {{"path", 12}})["type"] == "info");  // "" is the data dir
  CHECK(f.Ask(7, "list", {{"path", Json::array()}})["type"] == "entries");
  CHECK(f.Ask(8, "write_chunk", {{"write", "3"}})["type"] == "error");
  // A chunk whose content is not a payload (protocol 1's base64 field) is refused, and the
  // write with it.
  REQUIRE(f.Ask(9, "write_open", {{"path", "ok.txt"}})["type"] == "ok");
  Json old_style = f.Ask(10, "write_chunk", {{"write", 9}, {"content", "aGk="}});
  CHECK(old_style["type"] == "error");
  CHECK(old_style["code"] == "invalid_argument");
  CHECK(f.Ask(11, "write_commit", {{"write", 9}})["type"] == "error");  // dropped with its error
}

}  // namespace file_service_test
