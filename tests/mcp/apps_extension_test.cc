// MCP Apps (mcp/apps/ui_extension.h) in the dispatcher, in memory: a client that declares
// io.modelcontextprotocol/ui (in initialize, or in a 2026-07-28 request's _meta) gets the
// extension declared back, the view tools and the ui:// resources; one that does not gets
// exactly what it got before. The views in a real browser: tests/e2e/apps.test.mjs.
#include <catch2/catch.hpp>

#include "mcp/apps/ui_extension.h"
#include "mcp/protocol_era.h"
#include "mcp/server.h"
#include "tests/mcp/capture_reply.h"

namespace apps_extension_test {

using namespace sandbox;
using namespace sandbox::mcp;
using sandbox::mcp::testing::CaptureReply;

namespace {

const Json kUiCapabilities = {
    {"extensions", {{apps::kUiExtensionId, {{"mimeTypes", {apps::kUiMimeType}}}}}}};

// No session files: an empty list, and every other URI is not this provider's.
class NoResources : public ResourceProvider {
 public:
  Json Templates() override { return Json::array(); }
  Result<ResourcePage> List(const std::string&) override { return ResourcePage{}; }
  Result<Json> Read(const std::string&) override {
    return Fail(ErrorCode::kInvalidArgument, "not a session file");
  }
  Result<CompletionValues> Complete(const std::string&, const std::string&, const std::string&,
                                    const Json&) override {
    return CompletionValues{};
  }
  Result<std::string> Version(const std::string&) override { return std::string(); }
};

Tool EchoTool(std::string name, Json meta = nullptr) {
  Tool tool;
  tool.name = std::move(name);
  tool.description = "Echoes.";
  tool.input_schema = {{"type", "object"}};
  tool.meta = std::move(meta);
  tool.handler = [](ToolCall&, const Json&) {
    return Json{{"content", Json::array({{{"type", "text"}, {"text", "echo"}}})}};
  };
  return tool;
}

struct Fixture {
  Server server{
      [] {
        ServerOptions options;
        options.resources = std::make_shared<NoResources>();
        options.ui_tools.push_back(EchoTool("view_echo", apps::ToolUiMeta(apps::kTableViewUri)));
        return options;
      }(),
      {EchoTool("echo")}};
  int id = 0;

  Json Request(Connection& connection, const std::string& method, Json params = Json::object()) {
    auto reply = std::make_shared<CaptureReply>();
    connection.Handle({{"jsonrpc", "2.0"}, {"id", ++id}, {"method", method}, {"params", params}},
                      reply);
    REQUIRE(reply->WaitClosed());
    return reply->response();
  }
  std::shared_ptr<Connection> Initialized(const Json& capabilities) {
    auto connection = server.NewConnection();
    Json response = Request(*connection, "initialize",
                            {{"protocolVersion", "2025-11-25"}, {"capabilities", capabilities}});
    REQUIRE(response.contains("result"));
    last_initialize = response["result"];
    return connection;
  }
  Json last_initialize;
};

Json ModernParams(const Json& capabilities, Json params = Json::object()) {
  params["_meta"] = {{kMetaProtocolVersion, "2026-07-28"},
                     {kMetaClientCapabilities, capabilities},
                     {kMetaClientInfo, {{"name", "t"}, {"version", "1"}}}};
  return params;
}

}  // namespace

TEST_CASE("apps: a client declares the extension by its id and the view MIME type", "[unit]") {
  CHECK(apps::DeclaresUi(kUiCapabilities));
  CHECK(apps::DeclaresUi({{"extensions", {{apps::kUiExtensionId, Json::object()}}}}));
  CHECK_FALSE(apps::DeclaresUi(Json::object()));
  CHECK_FALSE(apps::DeclaresUi({{"extensions", {{apps::kUiExtensionId, true}}}}));
  CHECK_FALSE(
      apps::DeclaresUi({{"extensions", {{apps::kUiExtensionId, {{"mimeTypes", {"text/html"}}}}}}}));
}

TEST_CASE("apps: 2025 era, the extension only for a client that declared it", "[unit]") {
  Fixture f;
  auto plain = f.Initialized(Json::object());
  Json plain_init = f.last_initialize;
  auto ui = f.Initialized(kUiCapabilities);
  Json ui_init = f.last_initialize;

  CHECK_FALSE(plain_init["capabilities"].contains("extensions"));
  CHECK(ui_init["capabilities"]["extensions"] == Json{{apps::kUiExtensionId, Json::object()}});

  Json plain_tools = f.Request(*plain, "tools/list")["result"]["tools"];
  Json ui_tools = f.Request(*ui, "tools/list")["result"]["tools"];
  REQUIRE(plain_tools.size() == 1);
  REQUIRE(ui_tools.size() == 2);
  CHECK(ui_tools[0].dump() == plain_tools[0].dump());
  CHECK(ui_tools[1]["_meta"]["ui"]["resourceUri"] == apps::kTableViewUri);
  CHECK(ui_tools[1]["_meta"]["ui/resourceUri"] == apps::kTableViewUri);

  // The view tool is unknown to the plain client, callable by the other.
  Json call = {{"name", "view_echo"}, {"arguments", Json::object()}};
  CHECK(f.Request(*plain, "tools/call", call)["error"]["code"] == kInvalidParams);
  CHECK(f.Request(*ui, "tools/call", call)["result"]["content"][0]["text"] == "echo");

  CHECK(f.Request(*plain, "resources/list")["result"]["resources"].empty());
  Json listed = f.Request(*ui, "resources/list")["result"]["resources"];
  REQUIRE(listed.size() == 3);
  CHECK(listed[0]["uri"] == apps::kTableViewUri);
  CHECK(listed[0]["mimeType"] == apps::kUiMimeType);

  Json read_params = {{"uri", apps::kTableViewUri}};
  CHECK(f.Request(*plain, "resources/read", read_params).contains("error"));
  Json contents = f.Request(*ui, "resources/read", read_params)["result"]["contents"];
  REQUIRE(contents.size() == 1);
  CHECK(contents[0]["mimeType"] == apps::kUiMimeType);
  std::string html = contents[0]["text"].get<std::string>();
  CHECK(html.rfind("<!doctype html>", 0) == 0);
  CHECK(html.find("connect-src 'none'") != std::string::npos);
  CHECK(contents[0]["_meta"]["ui"]["csp"]["connectDomains"].empty());
}

TEST_CASE("apps: 2026-07-28 era, the extension by each request's capabilities", "[unit]") {
  Fixture f;
  auto connection = f.server.NewConnection();
  Json plain = f.Request(*connection, "server/discover", ModernParams(Json::object()));
  Json ui = f.Request(*connection, "server/discover", ModernParams(kUiCapabilities));
  CHECK_FALSE(plain["result"]["capabilities"].contains("extensions"));
  CHECK(ui["result"]["capabilities"]["extensions"].contains(apps::kUiExtensionId));

  CHECK(f.Request(*connection, "tools/list", ModernParams(Json::object()))["result"]["tools"]
            .size() == 1);
  CHECK(f.Request(*connection, "tools/list", ModernParams(kUiCapabilities))["result"]["tools"]
            .size() == 2);
  Json read = ModernParams(kUiCapabilities, {{"uri", apps::kTableViewUri}});
  CHECK(f.Request(*connection, "resources/read", read)["result"]["contents"][0]["mimeType"] ==
        apps::kUiMimeType);
}

}  // namespace apps_extension_test
