// The typed agent-protocol messages (runtime/agent/messages.h): what one side's ToJson writes
// the other side's FromJson reads back, and a message of the wrong shape reads as defaults
// instead of throwing (init's messages are hostile to the host).
#include "runtime/agent/messages.h"

#include <catch2/catch.hpp>

namespace messages_test {

using namespace sandbox::agent;

TEST_CASE("agent messages: each reads back what it wrote, type and id included", "[unit]") {
  Hello hello{.protocol = kProtocolVersion,
              .init_pid = 1,
              .worker_pid = 7,
              .python = "3.11.2",
              .data_dir = "/mnt/data",
              .tmp_dir = "/tmp"};
  Json hello_json = hello.ToJson();
  CHECK(hello_json["type"] == "hello");
  CHECK(hello_json["id"] == 0);
  Hello hello_back = Hello::FromJson(hello_json);
  CHECK(hello_back.protocol == kProtocolVersion);
  CHECK(hello_back.init_pid == 1);
  CHECK(hello_back.worker_pid == 7);
  CHECK(hello_back.python == "3.11.2");
  CHECK(hello_back.data_dir == "/mnt/data");
  CHECK(hello_back.tmp_dir == "/tmp");

  ReadFileRequest read{.path = "a.csv", .max_bytes = 100, .offset = 8, .length = 4};
  Json read_json = read.ToJson(5);
  CHECK(read_json["type"] == "read_file");
  CHECK(read_json["id"] == 5);
  ReadFileRequest read_back = ReadFileRequest::FromJson(read_json);
  CHECK(read_back.path == "a.csv");
  CHECK(read_back.max_bytes == 100);
  CHECK(read_back.offset == 8);
  CHECK(read_back.length == 4);

  FileAnswer file{.size = 12, .eof = true, .dev = 3, .ino = 99};
  Json file_json = file.ToJson(5);
  CHECK(file_json["type"] == "file");
  CHECK_FALSE(file_json.contains(kPayloadField));  // the content is added as a payload
  FileAnswer file_back = FileAnswer::FromJson(file_json);
  CHECK(file_back.size == 12);
  CHECK(file_back.eof);
  CHECK(file_back.dev == 3);
  CHECK(file_back.ino == 99);

  WriteOpenRequest open{.path = "out/x.bin", .overwrite = false, .mode = 0600};
  Json open_json = open.ToJson(6);
  CHECK(open_json["type"] == "write_open");
  WriteOpenRequest open_back = WriteOpenRequest::FromJson(open_json);
  CHECK(open_back.path == "out/x.bin");
  CHECK_FALSE(open_back.overwrite);
  CHECK(open_back.mode == 0600);

  CHECK(WriteChunkRequest{.write = 6}.ToJson(7)["type"] == "write_chunk");
  CHECK(WriteChunkRequest::FromJson(WriteChunkRequest{.write = 6}.ToJson(7)).write == 6);
  CHECK(WriteCommitRequest{.write = 6}.ToJson(8)["type"] == "write_commit");
  CHECK(WriteCommitRequest::FromJson(WriteCommitRequest{.write = 6}.ToJson(8)).write == 6);
  CHECK(WriteAbortRequest{.write = 6}.ToJson(9)["type"] == "write_abort");
  CHECK(WriteAbortRequest::FromJson(WriteAbortRequest{.write = 6}.ToJson(9)).write == 6);

  Json ok = OkAnswer{.size = std::nullopt}.ToJson(7);
  CHECK(ok == Json{{"type", "ok"}, {"id", 7}});
  CHECK_FALSE(OkAnswer::FromJson(ok).size);
  Json committed = OkAnswer{.size = 0}.ToJson(8);  // an empty file still says its size
  CHECK(committed["size"] == 0);
  CHECK(OkAnswer::FromJson(committed).size == uint64_t{0});
}

TEST_CASE("agent messages: fields of the wrong type or missing read as defaults", "[unit]") {
  Json garbage{{"protocol", "2"},       {"init_pid", -1.5}, {"python", 3},
               {"path", Json::array()}, {"max_bytes", -1},  {"eof", "yes"},
               {"mode", "0600"},        {"write", "6"},     {"size", -4}};
  Hello hello = Hello::FromJson(garbage);
  CHECK(hello.protocol == 0);  // a hello of no known version: the client refuses it
  CHECK(hello.init_pid == 0);
  CHECK(hello.python.empty());
  ReadFileRequest read = ReadFileRequest::FromJson(garbage);
  CHECK(read.path.empty());
  CHECK(read.max_bytes == uint64_t{50} << 20);  // never "no cap"
  CHECK(read.length == kFileChunkBytes);
  CHECK_FALSE(FileAnswer::FromJson(garbage).eof);
  CHECK(WriteOpenRequest::FromJson(garbage).mode == 0644);
  CHECK(WriteOpenRequest::FromJson(garbage).overwrite);
  CHECK(WriteChunkRequest::FromJson(garbage).write == 0);
  CHECK(OkAnswer::FromJson(garbage).size == uint64_t{0});
  for (const Json& not_an_object : {Json::array(), Json(nullptr), Json("hello")}) {
    CHECK(Hello::FromJson(not_an_object).protocol == 0);
    CHECK_FALSE(OkAnswer::FromJson(not_an_object).size);
    CHECK(FileAnswer::FromJson(not_an_object).size == 0);
  }
}

}  // namespace messages_test
