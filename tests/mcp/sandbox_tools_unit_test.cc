// Every sandbox_* tool through the dispatcher, over a SessionManager on HostBackend (sandbox-init
// on the host): argument checks, path rules, output budgets and the shape of results and errors
// a client sees. Real sandboxes are covered by the behaviour suite and the e2e tests; these run
// in seconds without root, an image or a daemon.
#include <chrono>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "mcp/server.h"
#include "mcp/tools/sandbox_tools.h"
#include "runtime/base/base64.h"
#include "runtime/base/files.h"
#include "runtime/egress/egress_report.h"
#include "runtime/session/session_manager.h"
#include "tests/mcp/capture_reply.h"
#include "tests/support/host_backend.h"
#include "tests/support/log_capture.h"

namespace sandbox::mcp::sandbox_tools_unit_test {
namespace {

using testing::CaptureReply;

struct Fixture {
  explicit Fixture(ToolSettings tool_settings = DefaultSettings()) : settings(tool_settings) {
    SessionConfig config;
    config.default_image = "host";
    config.max_sessions = 4;
    config.exec_timeout_s = settings.exec_timeout_s;
    config.max_code_bytes = settings.max_code_bytes;
    config.max_output_bytes = settings.max_output_bytes;
    config.max_upload_bytes = settings.max_upload_bytes;
    backend = std::make_shared<sandbox::testing::HostBackend>();
    manager = std::make_unique<SessionManager>(config, backend, [](const std::string& name) {
      if (name != "host") {
        return Result<ResolvedImage>(
            Fail(ErrorCode::kNotFound, "image '{}' is not in the store", name));
      }
      ResolvedImage image;
      image.name = name;
      return Result<ResolvedImage>(image);
    });
    ServerOptions options;
    options.resources = SandboxResources(*manager, settings);
    server = std::make_unique<Server>(options, SandboxTools(*manager, settings));
    connection = server->NewConnection();
    Json init = Request({{"jsonrpc", "2.0"},
                         {"id", 0},
                         {"method", "initialize"},
                         {"params",
                          {{"protocolVersion", "2025-11-25"},
                           {"capabilities", Json::object()},
                           {"clientInfo", {{"name", "t"}, {"version", "1"}}}}}});
    REQUIRE(init.contains("result"));
    Send({{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}});
  }
  ~Fixture() {
    server->Shutdown();
    manager->CloseAll();
  }
  static ToolSettings DefaultSettings() {
    ToolSettings settings;
    settings.exec_timeout_s = 20;
    settings.max_upload_bytes = 1 << 20;
    settings.max_code_bytes = 4096;
    settings.max_output_bytes = 2000;
    settings.max_result_bytes = 256 << 10;
    return settings;
  }

  std::shared_ptr<CaptureReply> Send(Json message) {
    auto reply = std::make_shared<CaptureReply>();
    connection->Handle(std::move(message), reply);
    REQUIRE(reply->WaitClosed(std::chrono::seconds(60)));
    return reply;
  }
  Json Request(Json message) { return Send(std::move(message))->response(); }
  // The JSON-RPC response to tools/call.
  Json CallRaw(const std::string& tool, Json arguments) {
    return Request({{"jsonrpc", "2.0"},
                    {"id", ++next_id},
                    {"method", "tools/call"},
                    {"params", {{"name", tool}, {"arguments", std::move(arguments)}}}});
  }
  // A tool result (the "result" member), failing the test on a protocol error.
  Json Call(const std::string& tool, Json arguments = Json::object()) {
    Json response = CallRaw(tool, std::move(arguments));
    INFO(response.dump());
    REQUIRE(response.contains("result"));
    return response["result"];
  }
  // A tool result that must be a tool error; returns its error code name.
  std::string CallError(const std::string& tool, Json arguments) {
    Json result = Call(tool, std::move(arguments));
    INFO(result.dump());
    REQUIRE(result.value("isError", false));
    REQUIRE(result["structuredContent"].contains("message"));
    return result["structuredContent"]["error"].get<std::string>();
  }
  std::string NewSession() {
    Json result = Call("sandbox_create_session", {{"name", "t"}});
    REQUIRE_FALSE(result.value("isError", false));
    return result["structuredContent"]["session_id"].get<std::string>();
  }
  std::string DataDir(size_t sandbox = 0) { return backend->started().at(sandbox)->data_dir; }

  ToolSettings settings;
  std::shared_ptr<sandbox::testing::HostBackend> backend;
  std::unique_ptr<SessionManager> manager;
  std::unique_ptr<Server> server;
  std::shared_ptr<Connection> connection;
  int next_id = 0;
};

TEST_CASE("tools: all fourteen are listed, each with schemas a client can check", "[unit]") {
  Fixture f;
  Json list = f.Request({{"jsonrpc", "2.0"}, {"id", 1}, {"method", "tools/list"}});
  const Json& tools = list["result"]["tools"];
  REQUIRE(tools.size() == 14);
  for (const auto& tool : tools) {
    INFO(tool["name"]);
    CHECK(tool["name"].get<std::string>().rfind("sandbox_", 0) == 0);
    CHECK(tool["inputSchema"]["type"] == "object");
    CHECK(tool["description"].get<std::string>().size() > 20);
    // 2026-07-28: a front end routes on Mcp-Param-Session-Id without reading the body.
    if (tool["inputSchema"]["properties"].contains("session_id")) {
      CHECK(tool["inputSchema"]["properties"]["session_id"]["x-mcp-header"] == "Session-Id");
    }
  }
}

TEST_CASE("tools: sessions are created, listed, described and closed", "[unit]") {
  Fixture f;
  Json created = f.Call("sandbox_create_session", {{"name", "analysis"}, {"memory_limit", "256m"}});
  REQUIRE_FALSE(created.value("isError", false));
  std::string id = created["structuredContent"]["session_id"];
  CHECK(f.backend->started().at(0)->spec.limits.memory_bytes == 256ull << 20);
  CHECK(created["structuredContent"]["enforced"]["limits"].is_array());

  Json listed = f.Call("sandbox_list_sessions");
  REQUIRE(listed["structuredContent"]["sessions"].size() == 1);
  CHECK(listed["structuredContent"]["sessions"][0]["session_id"] == id);

  Json status = f.Call("sandbox_session_status", {{"session_id", id}});
  CHECK(status["structuredContent"]["name"] == "analysis");
  CHECK(status["structuredContent"]["state"] == "idle");

  Json closed = f.Call("sandbox_close_session", {{"session_id", id}});
  CHECK(closed["structuredContent"]["status"] == "closed");
  CHECK(f.CallError("sandbox_session_status", {{"session_id", id}}) == "session_not_found");
  CHECK(f.CallError("sandbox_close_session", {{"session_id", id}}) == "session_not_found");
  CHECK(f.CallError("sandbox_session_status", {{"session_id", "sess_nothex!"}}) ==
        "invalid_session_id");
}

TEST_CASE("tools: create_session refuses limits above the server's and unknown images", "[unit]") {
  Fixture f;
  CHECK(f.CallError("sandbox_create_session", {{"memory_limit", "100g"}}) == "invalid_argument");
  CHECK(f.CallError("sandbox_create_session", {{"memory_limit", "lots"}}) == "invalid_argument");
  CHECK(f.CallError("sandbox_create_session", {{"image", "nope"}}) == "not_found");
  CHECK(f.backend->started().empty());  // refused before any sandbox started
  // A schema violation is a tool error the model can read and correct (SEP-1303).
  CHECK(f.CallError("sandbox_create_session", {{"cpu_limit", "fast"}}) == "invalid_argument");
}

TEST_CASE("tools: run_python keeps state, reports errors and cuts output to the budget", "[unit]") {
  Fixture f;
  // No session_id: one is created for the call and named in the result.
  Json first = f.Call("sandbox_run_python", {{"code", "x = 6 * 7\nprint(x)"}});
  REQUIRE_FALSE(first.value("isError", false));
  std::string id = first["structuredContent"]["session_id"];
  CHECK(first["structuredContent"]["session_created"] == true);
  CHECK(first["structuredContent"]["stdout"] == "42\n");
  CHECK(first["structuredContent"]["exit_code"] == 0);

  Json again = f.Call("sandbox_run_python", {{"session_id", id}, {"code", "print(x + 1)"}});
  CHECK(again["structuredContent"]["stdout"] == "43\n");

  Json raised = f.Call("sandbox_run_python", {{"session_id", id}, {"code", "1 / 0"}});
  CHECK(raised["structuredContent"]["exit_code"] == 1);
  CHECK(raised["structuredContent"]["stderr"].get<std::string>().find("ZeroDivisionError") !=
        std::string::npos);

  Json chatty = f.Call("sandbox_run_python", {{"session_id", id}, {"code", "print('y' * 9000)"}});
  CHECK(chatty["structuredContent"]["stdout"].get<std::string>().size() <= 2000);
  CHECK(chatty["structuredContent"]["stdout_truncated"] == true);

  CHECK(f.CallError("sandbox_run_python", {{"session_id", id}, {"code", std::string(5000, '#')}}) ==
        "code_too_large");
  Json capped = f.Call("sandbox_run_python",
                       {{"session_id", id}, {"code", "print('ok')"}, {"timeout_s", 999}});
  CHECK(capped["structuredContent"]["stdout"] == "ok\n");  // clamped to the maximum, with a note
  CHECK(capped.dump().find("maximum") != std::string::npos);

  CHECK(f.CallError("sandbox_run_python", {{"session_id", id}}) == "invalid_argument");
  CHECK(f.CallError("sandbox_run_python", {{"session_id", "sess_000000000000"}, {"code", "1"}}) ==
        "session_not_found");
}

TEST_CASE("tools: a run's usage object has the documented members, with and without a call peak",
          "[unit]") {
  Fixture f;
  std::string id = f.NewSession();
  auto member_names = [](const Json& usage) {
    std::vector<std::string> names;
    for (const auto& [name, value] : usage.items()) names.push_back(name);
    return names;
  };
  // Where the kernel gives no per-call peak (and the session's peak reads 0): the two times.
  Json plain = f.Call("sandbox_run_python", {{"session_id", id}, {"code", "print(1)"}});
  const Json& usage = plain["structuredContent"]["usage"];
  INFO(usage.dump());
  CHECK(member_names(usage) == std::vector<std::string>{"cpu_seconds", "wall_seconds"});
  CHECK(usage["cpu_seconds"].is_number_float());
  CHECK(usage["cpu_seconds"].get<double>() >= 0);
  CHECK(usage["wall_seconds"] == plain["structuredContent"]["duration_s"]);

  // With one, as a cgroup's reset high-water mark gives it: the peak and its scope beside them.
  f.backend->started().at(0)->call_peak_bytes = 123456789;
  Json peaked = f.Call("sandbox_run_python", {{"session_id", id}, {"code", "print(2)"}});
  const Json& with_peak = peaked["structuredContent"]["usage"];
  INFO(with_peak.dump());
  CHECK(member_names(with_peak) == std::vector<std::string>{"cpu_seconds", "memory_peak_bytes",
                                                            "memory_peak_scope", "wall_seconds"});
  CHECK(with_peak["memory_peak_bytes"].is_number_unsigned());
  CHECK(with_peak["memory_peak_bytes"] == 123456789);
  CHECK(with_peak["memory_peak_scope"] == "call");
  CHECK(with_peak["wall_seconds"] == peaked["structuredContent"]["duration_s"]);
}

TEST_CASE("tools: run_command runs the shell in /mnt/data and returns its status", "[unit]") {
  Fixture f;
  std::string id = f.NewSession();
  Json ok = f.Call("sandbox_run_command",
                   {{"session_id", id}, {"command", "echo hi > note.txt; cat note.txt"}});
  CHECK(ok["structuredContent"]["stdout"] == "hi\n");
  CHECK(ReadFile(f.DataDir() + "/note.txt").value_or("") == "hi\n");
  Json failed = f.Call("sandbox_run_command", {{"session_id", id}, {"command", "exit 3"}});
  CHECK(failed["structuredContent"]["exit_code"] == 3);
  CHECK(f.CallError("sandbox_run_command", {{"session_id", id}, {"command", ""}}) ==
        "invalid_argument");
}

TEST_CASE("tools: files go in and out under the path rules and size limits", "[unit]") {
  Fixture f;
  std::string id = f.NewSession();
  Json uploaded = f.Call("sandbox_upload_file", {{"session_id", id},
                                                 {"filename", "in/data.csv"},
                                                 {"content_base64", Base64Encode("a,b\n1,2\n")}});
  REQUIRE_FALSE(uploaded.value("isError", false));
  CHECK(uploaded["structuredContent"]["size"] == 8);
  CHECK(ReadFile(f.DataDir() + "/in/data.csv").value_or("") == "a,b\n1,2\n");
  // The former argument name still works; both at once is ambiguous.
  Json legacy =
      f.Call("sandbox_upload_file",
             {{"session_id", id}, {"filename", "legacy.txt"}, {"content", Base64Encode("old")}});
  CHECK_FALSE(legacy.value("isError", false));
  Json both = f.CallRaw("sandbox_upload_file", {{"session_id", id},
                                                {"filename", "x"},
                                                {"content", Base64Encode("1")},
                                                {"content_base64", Base64Encode("2")}});
  CHECK(both["error"]["code"] == -32602);

  CHECK(f.CallError("sandbox_upload_file", {{"session_id", id},
                                            {"filename", "in/data.csv"},
                                            {"content_base64", Base64Encode("again")}}) ==
        "file_exists");
  CHECK(f.CallError("sandbox_upload_file", {{"session_id", id},
                                            {"filename", "../escape.txt"},
                                            {"content_base64", Base64Encode("x")}}) ==
        "invalid_filename");
  CHECK(f.CallError("sandbox_upload_file",
                    {{"session_id", id},
                     {"filename", "big.bin"},
                     {"content_base64", Base64Encode(std::string(2 << 20, 'b'))}}) ==
        "upload_too_large");
  CHECK(f.CallError(
            "sandbox_upload_file",
            {{"session_id", id}, {"filename", "bad.bin"}, {"content_base64", "not*base64!"}}) ==
        "invalid_argument");

  Json written = f.Call("sandbox_write_file",
                        {{"session_id", id}, {"path", "script.py"}, {"content", "print('w')\n"}});
  CHECK_FALSE(written.value("isError", false));
  Json read = f.Call("sandbox_read_file", {{"session_id", id}, {"path", "script.py"}});
  CHECK(read["structuredContent"]["content"] == "print('w')\n");
  CHECK(f.CallError("sandbox_read_file", {{"session_id", id}, {"path", "missing.txt"}}) ==
        "not_found");
  // Writes stay under /mnt/data and /tmp; reads may see the sandbox's whole (read-only) tree.
  CHECK(f.CallError("sandbox_write_file",
                    {{"session_id", id}, {"path", "/etc/evil"}, {"content", "x"}}) ==
        "invalid_path");

  Json listing = f.Call("sandbox_list_artifacts", {{"session_id", id}});
  std::string files = listing["structuredContent"]["files"].dump();
  CHECK(files.find("in/data.csv") != std::string::npos);
  CHECK(files.find("script.py") != std::string::npos);

  Json artifact = f.Call("sandbox_read_artifact", {{"session_id", id}, {"path", "in/data.csv"}});
  CHECK_FALSE(artifact.value("isError", false));
  CHECK(artifact.dump().find("a,b") != std::string::npos);
  CHECK(f.CallError("sandbox_read_artifact", {{"session_id", id}, {"path", "nothing.png"}}) ==
        "not_found");
}

TEST_CASE("tools: install_packages says why it cannot install, without a wheelhouse", "[unit]") {
  Fixture f;
  std::string id = f.NewSession();
  Json result =
      f.Call("sandbox_install_packages", {{"session_id", id}, {"packages", {"tabulate"}}});
  REQUIRE(result.value("isError", false));
  CHECK(result["structuredContent"]["message"].get<std::string>().find("wheelhouse") !=
        std::string::npos);
  Json none =
      f.CallRaw("sandbox_install_packages", {{"session_id", id}, {"packages", Json::array()}});
  CHECK(none.dump().find("error") != std::string::npos);
}

TEST_CASE("tools: run_once runs with its files in a session of its own, then closes it", "[unit]") {
  Fixture f;
  Json result = f.Call("sandbox_run_once",
                       {{"code", "print(open('in.txt').read().upper())"},
                        {"files", {{{"filename", "in.txt"}, {"content", Base64Encode("shout")}}}}});
  INFO(result.dump());
  REQUIRE_FALSE(result.value("isError", false));
  CHECK(result["structuredContent"]["stdout"] == "SHOUT\n");
  CHECK(f.manager->List().empty());  // nothing left open
  // The answer does not wait for the teardown; the reaper destroys the sandbox a moment later.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!f.backend->started().at(0)->destroyed && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  CHECK(f.backend->started().at(0)->destroyed);
  Json shell = f.Call("sandbox_run_once", {{"code", "echo $((6*7))"}, {"language", "shell"}});
  CHECK(shell["structuredContent"]["stdout"] == "42\n");
  Json bad = f.CallRaw("sandbox_run_once", {{"code", "1"}, {"language", "cobol"}});
  CHECK(bad.dump().find("error") != std::string::npos);
}

}  // namespace
}  // namespace sandbox::mcp::sandbox_tools_unit_test

// --- Session files as resources ------------------------------------------------------------

namespace sandbox::mcp::sandbox_tools_unit_test {
namespace {

Json ResourceRequest(Fixture& f, const std::string& method, Json params) {
  return f.Request(
      {{"jsonrpc", "2.0"}, {"id", ++f.next_id}, {"method", method}, {"params", std::move(params)}});
}

std::string FileUri(const std::string& session, const std::string& path) {
  return "sandbox://sessions/" + session + "/files/" + path;
}

}  // namespace

TEST_CASE("resources: session files are read as text or blob, by the template", "[unit]") {
  Fixture f;
  std::string id = f.NewSession();
  REQUIRE_FALSE(f.Call("sandbox_write_file",
                       {{"session_id", id}, {"path", "out/a.txt"}, {"content", "hello"}})
                    .value("isError", false));
  REQUIRE_FALSE(f.Call("sandbox_upload_file", {{"session_id", id},
                                               {"filename", "b.bin"},
                                               {"content_base64", Base64Encode("\x01\x02\xff")}})
                    .value("isError", false));
  Json templates = ResourceRequest(f, "resources/templates/list", Json::object());
  CHECK(templates["result"]["resourceTemplates"][0]["uriTemplate"] ==
        "sandbox://sessions/{session_id}/files/{+path}");

  Json text = ResourceRequest(f, "resources/read", {{"uri", FileUri(id, "out/a.txt")}});
  INFO(text.dump());
  CHECK(text["result"]["contents"][0]["text"] == "hello");
  CHECK(text["result"]["contents"][0]["mimeType"] == "text/plain");
  CHECK(text["result"]["contents"][0]["uri"] == FileUri(id, "out/a.txt"));
  Json blob = ResourceRequest(f, "resources/read", {{"uri", FileUri(id, "b.bin")}});
  CHECK(Base64Decode(blob["result"]["contents"][0]["blob"].get<std::string>()) ==
        std::string("\x01\x02\xff"));
  CHECK(blob["result"]["contents"][0].contains("mimeType"));

  // Errors: JSON-RPC errors, never results.
  CHECK(ResourceRequest(f, "resources/read", {{"uri", FileUri(id, "nope.txt")}})["error"]["code"] ==
        kResourceNotFound);
  CHECK(ResourceRequest(f, "resources/read",
                        {{"uri", FileUri("sess_000000000000", "a.txt")}})["error"]["code"] ==
        kResourceNotFound);
  CHECK(ResourceRequest(f, "resources/read",
                        {{"uri", FileUri("../../x", "a.txt")}})["error"]["code"] == kInvalidParams);
  CHECK(ResourceRequest(f, "resources/read",
                        {{"uri", FileUri(id, "../../etc/passwd")}})["error"]["code"] ==
        kInvalidParams);
  CHECK(ResourceRequest(f, "resources/read", {{"uri", FileUri(id, "out")}})["error"]["code"] ==
        kInvalidParams);  // a directory
}

TEST_CASE("resources: the size limit of sandbox_read_artifact holds for resources/read", "[unit]") {
  ToolSettings settings = Fixture::DefaultSettings();
  settings.max_result_bytes = 32 << 10;
  Fixture f(settings);
  std::string id = f.NewSession();
  REQUIRE_FALSE(
      f.Call("sandbox_upload_file", {{"session_id", id},
                                     {"filename", "big.bin"},
                                     {"content_base64", Base64Encode(std::string(40000, 'x'))}})
          .value("isError", false));
  Json big = ResourceRequest(f, "resources/read", {{"uri", FileUri(id, "big.bin")}});
  CHECK(big["error"]["code"] == kInvalidParams);
  CHECK(big["error"]["data"]["error"] == "artifact_too_large");
  CHECK(f.CallError("sandbox_read_artifact", {{"session_id", id}, {"path", "big.bin"}}) ==
        "artifact_too_large");
}

TEST_CASE("resources: list pages through the files of live sessions", "[unit]") {
  Fixture f;
  std::string id = f.NewSession();
  for (int i = 0; i < 120; ++i) {
    REQUIRE_FALSE(
        f.Call("sandbox_write_file",
               {{"session_id", id}, {"path", fmt::format("f{:03}.txt", i)}, {"content", "x"}})
            .value("isError", false));
  }
  std::vector<std::string> uris;
  Json params = Json::object();
  int pages = 0;
  for (; pages < 5; ++pages) {
    Json result = ResourceRequest(f, "resources/list", params)["result"];
    for (const auto& resource : result["resources"]) {
      uris.push_back(resource["uri"]);
      CHECK(resource.contains("name"));
    }
    if (!result.contains("nextCursor")) break;
    params = {{"cursor", result["nextCursor"]}};
  }
  CHECK(pages == 1);
  REQUIRE(uris.size() == 120);
  CHECK(uris.front() == FileUri(id, "f000.txt"));
  CHECK(uris.back() == FileUri(id, "f119.txt"));
  CHECK(ResourceRequest(f, "resources/list", {{"cursor", "garbage"}})["error"]["code"] ==
        kInvalidParams);
}

TEST_CASE("resources: a command that changes a subscribed file announces it", "[unit]") {
  Fixture f;
  std::string id = f.NewSession();
  std::string uri = FileUri(id, "watched.txt");
  CHECK(ResourceRequest(f, "resources/subscribe", {{"uri", uri}})["result"] == Json::object());
  auto updates = [&](const std::string& command) {
    auto reply = f.Send({{"jsonrpc", "2.0"},
                         {"id", ++f.next_id},
                         {"method", "tools/call"},
                         {"params",
                          {{"name", "sandbox_run_command"},
                           {"arguments", {{"session_id", id}, {"command", command}}}}}});
    int count = 0;
    for (const auto& message : reply->messages()) {
      if (message.value("method", "") == "notifications/resources/updated") {
        CHECK(message["params"]["uri"] == uri);
        ++count;
      }
    }
    return count;
  };
  CHECK(updates("echo one > /mnt/data/watched.txt") == 1);  // created
  CHECK(updates("true") == 0);
  CHECK(updates("echo two-longer >> /mnt/data/watched.txt") == 1);
  CHECK(updates("echo other > /mnt/data/other.txt") == 0);
  CHECK(updates("rm /mnt/data/watched.txt") == 1);
  CHECK(ResourceRequest(f, "resources/subscribe",
                        {{"uri", FileUri(id, "a/../b")}})["error"]["code"] == kInvalidParams);
}

TEST_CASE("resources: completion of session_id and path", "[unit]") {
  Fixture f;
  std::string id = f.NewSession();
  REQUIRE_FALSE(
      f.Call("sandbox_write_file", {{"session_id", id}, {"path", "data/x.csv"}, {"content", "a"}})
          .value("isError", false));
  auto complete = [&](const std::string& argument, const std::string& value, Json context) {
    Json params = {
        {"ref",
         {{"type", "ref/resource"}, {"uri", "sandbox://sessions/{session_id}/files/{+path}"}}},
        {"argument", {{"name", argument}, {"value", value}}}};
    if (!context.is_null()) params["context"] = {{"arguments", context}};
    Json response = ResourceRequest(f, "completion/complete", params);
    INFO(response.dump());
    REQUIRE(response.contains("result"));
    return response["result"]["completion"]["values"];
  };
  CHECK(complete("session_id", "sess_", nullptr) == Json::array({id}));
  CHECK(complete("session_id", "nope", nullptr) == Json::array());
  CHECK(complete("path", "da", {{"session_id", id}}) == Json::array({"data/", "data/x.csv"}));
  CHECK(complete("path", "", nullptr) == Json::array());  // no session chosen yet
}

}  // namespace sandbox::mcp::sandbox_tools_unit_test

namespace sandbox::mcp::sandbox_tools_unit_test {
namespace {

// A valid small value for each argument a tool may require, so that the one argument under test
// is the only odd one.
Json SmallValue(const std::string& name, const std::string& session_id) {
  if (name == "session_id") return session_id;
  if (name == "path" || name == "filename") return "bound.txt";
  if (name == "content") return "x";
  if (name == "content_base64") return "eA==";
  if (name == "code") return "print(1)";
  if (name == "command") return "true";
  if (name == "packages") return Json::array({"six"});
  if (name == "files") return Json::array({{{"filename", "in.txt"}, {"content", "eA=="}}});
  return nullptr;
}

}  // namespace

TEST_CASE("tools: 1 MiB arguments come back bounded, in the result and in the log", "[unit]") {
  Fixture f;
  const std::string id = f.NewSession();
  // Quotes, a backslash, a newline and a byte that is not UTF-8 in the middle of 1 MiB.
  const std::string huge = std::string(1 << 19, 'x') + "\"\\\n\xff" + std::string(1 << 19, 'y');
  Json tools =
      f.Request({{"jsonrpc", "2.0"}, {"id", 1}, {"method", "tools/list"}})["result"]["tools"];
  sandbox::testing::LogCapture log;
  int calls = 0;
  for (const auto& tool : tools) {
    const std::string name = tool["name"].get<std::string>();
    const Json& properties = tool["inputSchema"]["properties"];
    const Json required = tool["inputSchema"].value("required", Json::array());
    // Every argument in turn: a string gets the 1 MiB text, an array of strings one item of it,
    // an array of objects one string member of its item.
    std::vector<std::pair<std::string, Json>> cases;
    for (const auto& [argument, schema] : properties.items()) {
      std::string type = schema.value("type", "");
      if (type == "string") cases.emplace_back(argument, huge);
      if (type == "array" && schema["items"].value("type", "") == "string") {
        cases.emplace_back(argument, Json::array({huge}));
      }
      if (type == "array" && schema["items"].value("type", "") == "object") {
        for (const auto& [member, member_schema] : schema["items"]["properties"].items()) {
          if (member_schema.value("type", "") != "string") continue;
          Json item = SmallValue(argument, id).at(0);
          item[member] = huge;
          cases.emplace_back(argument + "." + member, Json::array({item}));
        }
      }
    }
    for (const auto& [label, value] : cases) {
      Json arguments = Json::object();
      for (const auto& argument : required) {
        arguments[argument.get<std::string>()] = SmallValue(argument.get<std::string>(), id);
      }
      // Keep to the one session, so the server's session cap never answers instead.
      if (properties.contains("session_id")) arguments["session_id"] = id;
      arguments[label.substr(0, label.find('.'))] = value;
      INFO(name << " with 1 MiB in " << label);
      size_t log_before = log.Size();
      size_t lines_before = log.Count("tool_call ");
      Json response = f.CallRaw(name, arguments);
      ++calls;
      // The call's tool_call line is written once its response is sent: counted when it is there.
      if (response.contains("result")) CHECK(log.WaitForMore("tool_call ", lines_before));
      size_t logged = log.Size() - log_before;
      INFO(response.dump().substr(0, 400));
      CHECK(response.dump().size() < 16 * 1024);
      CHECK(logged < 2048);
      // Nothing echoed whole: the structured result holds no long client text.
      if (response.contains("result") && response["result"].contains("structuredContent")) {
        for (const auto& [key, member] : response["result"]["structuredContent"].items()) {
          if (member.is_string()) CHECK(member.get<std::string>().size() < 1024);
        }
      }
    }
  }
  CHECK(calls >= 20);
  // A session id that is not one: never the whole argument, in the result or the log line.
  for (const char* tool :
       {"sandbox_read_artifact", "sandbox_list_artifacts", "sandbox_read_file"}) {
    INFO(tool);
    size_t lines_before = log.Count("tool_call ");
    Json result = f.Call(tool, {{"session_id", huge}, {"path", "../../etc/passwd\n"}});
    CHECK(log.WaitForMore("tool_call ", lines_before));
    CHECK(result.value("isError", false));
    CHECK_FALSE(result["structuredContent"].contains("session_id"));
  }
  std::string text = log.Text();
  CHECK(text.find(std::string(200, 'x')) == std::string::npos);
  CHECK(text.find("session='xxxx") != std::string::npos);  // the tool_call line, quoted and cut
}

}  // namespace sandbox::mcp::sandbox_tools_unit_test

namespace sandbox::mcp::sandbox_tools_unit_test {
namespace {

// HostBackend with an egress channel: the session manager then keeps the server's policy (it
// drops the policy of a backend that cannot carry egress). The channel is never served here.
class EgressHostBackend : public sandbox::testing::HostBackend {
 public:
  EgressTransport egress_transport() const override { return EgressTransport::kChannelFd; }
};

Result<ResolvedImage> HostImage(const std::string& name) {
  ResolvedImage image;
  image.name = name;
  return image;
}

}  // namespace

TEST_CASE("tools: what the server says about the network follows the egress policy, both ways",
          "[unit]") {
  struct Case {
    const char* label;
    std::string allow;
    std::shared_ptr<Backend> backend;
    bool network;
  };
  std::vector<Case> cases = {
      {"no allowlist", "", std::make_shared<EgressHostBackend>(), false},
      {"an allowlist", "pypi.org,files.pythonhosted.org", std::make_shared<EgressHostBackend>(),
       true},
      // The policy is dropped with a warning: nothing may then say there is a network.
      {"an allowlist, a backend without egress", "pypi.org",
       std::make_shared<sandbox::testing::HostBackend>(), false},
  };
  const std::set<std::string> runs_code = {"sandbox_run_python", "sandbox_run_command",
                                           "sandbox_run_once", "sandbox_install_packages"};
  for (const Case& c : cases) {
    INFO(c.label);
    SessionConfig config;
    config.default_image = "host";
    if (!c.allow.empty()) {
      auto allow = egress::Allowlist::Parse(c.allow);
      REQUIRE(allow);
      config.egress.allow = *allow;
    }
    SessionManager manager(config, c.backend, HostImage);
    ToolSettings settings;
    const std::string instructions = SandboxInstructions(settings, manager.config().egress);
    CHECK((instructions.find("There is no network access.") == std::string::npos) == c.network);
    CHECK((instructions.find("pypi.org") != std::string::npos) == c.network);
    for (const Tool& tool : SandboxTools(manager, settings)) {
      INFO(tool.name);
      const bool open = c.network && runs_code.count(tool.name) != 0;
      CHECK(tool.annotations["openWorldHint"] == open);
      if (tool.name == "sandbox_install_packages" || runs_code.count(tool.name) == 0) continue;
      CHECK((tool.description.find("There is no network access.") == std::string::npos) ==
            c.network);
      CHECK((tool.description.find("pypi.org, files.pythonhosted.org") != std::string::npos) ==
            c.network);
    }
    // The egress object a session reports (status, create_session, run --json) says the same.
    auto session = manager.Create(SessionOptions{});
    REQUIRE(session);
    Json egress = egress::EgressJson(session->egress, /*with_usage=*/true);
    CHECK(egress["enabled"] == c.network);
    CHECK(egress.contains("allow") == c.network);
    manager.CloseAll();
  }
}

}  // namespace sandbox::mcp::sandbox_tools_unit_test

namespace sandbox::mcp::sandbox_tools_unit_test {

TEST_CASE("tools: the upload size limit is one check, worded alike in every tool that takes a file",
          "[unit]") {
  Fixture f;
  std::string id = f.NewSession();
  const std::string over(f.settings.max_upload_bytes + 1, 'b');
  const std::string limit_text = "files are limited to 1MiB (SANDBOX_MAX_UPLOAD_BYTES)";
  auto refused = [&](const std::string& tool, Json arguments) {
    Json result = f.Call(tool, std::move(arguments));
    INFO(tool << ": " << result["structuredContent"].dump());
    CHECK(result["structuredContent"]["error"] == "upload_too_large");
    std::string message = result["structuredContent"]["message"].get<std::string>();
    CHECK(message.find(limit_text) != std::string::npos);
    return message;
  };
  CHECK(
      refused("sandbox_upload_file",
              {{"session_id", id}, {"filename", "big.bin"}, {"content_base64", Base64Encode(over)}})
          .starts_with("the file has"));
  CHECK(refused("sandbox_write_file", {{"session_id", id}, {"path", "big.txt"}, {"content", over}})
            .starts_with("the text has"));
  CHECK(refused(
            "sandbox_run_once",
            {{"code", "print(1)"},
             {"files", Json::array({{{"filename", "big.bin"}, {"content", Base64Encode(over)}}})}})
            .starts_with("/mnt/data/big.bin has"));
}

}  // namespace sandbox::mcp::sandbox_tools_unit_test
