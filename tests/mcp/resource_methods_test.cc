// The dispatcher's resource methods in memory, over a provider defined here: capabilities,
// templates, read (text, blob, errors by revision), list with cursors, subscribe and the
// updates after tool calls, completion. The session-file provider is tested end to end
// (tests/e2e) and against a real SessionManager (sandbox_tools_unit_test.cc).
#include <map>
#include <mutex>

#include <catch2/catch.hpp>

#include "mcp/server.h"
#include "mcp/tool_result.h"
#include "tests/mcp/capture_reply.h"

namespace resource_methods_test {

using namespace sandbox;
using namespace sandbox::mcp;
using sandbox::mcp::testing::CaptureReply;

namespace {

// mem://N resources: text "content N", version bumped by the `touch` tool.
class MemoryResources : public ResourceProvider {
 public:
  explicit MemoryResources(int count) {
    for (int i = 0; i < count; ++i) versions_["mem://" + std::to_string(i)] = 1;
  }
  Json Templates() override {
    return Json::array({{{"uriTemplate", "mem://{n}"}, {"name", "memory"}}});
  }
  Result<ResourcePage> List(const std::string& cursor) override {
    std::lock_guard<std::mutex> lock(mutex_);
    std::string after;
    if (!cursor.empty()) {
      auto position = DecodeCursor(cursor);
      if (!position) return Fail(ErrorCode::kInvalidArgument, "unknown cursor");
      after = *position;
    }
    ResourcePage page;
    for (const auto& [uri, version] : versions_) {
      if (!after.empty() && uri <= after) continue;
      if (page.resources.size() == 2) {
        page.next_cursor = EncodeCursor(page.resources.back()["uri"].get<std::string>());
        break;
      }
      page.resources.push_back({{"uri", uri}, {"name", uri}});
    }
    return page;
  }
  Result<Json> Read(const std::string& uri) override {
    if (uri == "mem://binary") {
      return Json::array({{{"uri", uri}, {"mimeType", "image/png"}, {"blob", "AAEC"}}});
    }
    if (uri.rfind("mem://", 0) != 0) return Fail(ErrorCode::kInvalidArgument, "not mem://");
    std::lock_guard<std::mutex> lock(mutex_);
    if (versions_.count(uri) == 0) return Fail(ErrorCode::kNotFound, "no {}", uri);
    return Json::array({{{"uri", uri}, {"mimeType", "text/plain"}, {"text", "content"}}});
  }
  Result<CompletionValues> Complete(const std::string& uri_template, const std::string& argument,
                                    const std::string& prefix, const Json&) override {
    if (uri_template != "mem://{n}" || argument != "n") {
      return Fail(ErrorCode::kInvalidArgument, "no such template argument");
    }
    CompletionValues completion;
    for (const char* n : {"1", "10", "2"}) {
      if (std::string(n).rfind(prefix, 0) == 0) completion.values.push_back(n);
    }
    completion.total = completion.values.size();
    return completion;
  }
  Result<std::string> Version(const std::string& uri) override {
    if (uri.rfind("mem://", 0) != 0) return Fail(ErrorCode::kInvalidArgument, "not mem://");
    std::lock_guard<std::mutex> lock(mutex_);
    if (busy_) return Fail(ErrorCode::kSessionBusy, "busy");
    auto it = versions_.find(uri);
    return it == versions_.end() ? std::string() : std::to_string(it->second);
  }
  void Touch(const std::string& uri) {
    std::lock_guard<std::mutex> lock(mutex_);
    ++versions_[uri];
  }
  void SetBusy(bool busy) {
    std::lock_guard<std::mutex> lock(mutex_);
    busy_ = busy;
  }

 private:
  std::mutex mutex_;
  std::map<std::string, int> versions_;
  bool busy_ = false;
};

Json Schema() { return {{"type", "object"}, {"additionalProperties", true}}; }

struct Fixture {
  std::shared_ptr<MemoryResources> resources = std::make_shared<MemoryResources>(5);
  Server server{[this] {
                  ServerOptions options;
                  options.resources = resources;
                  return options;
                }(),
                [this] {
                  std::vector<Tool> tools;
                  // Writes: the dispatcher looks at subscriptions after it.
                  tools.push_back({"touch", "", "Changes a resource.", Schema(), nullptr, nullptr,
                                   [this](ToolCall&, const Json& args) {
                                     resources->Touch(args["uri"].get<std::string>());
                                     return Json{{"content", Json::array()}};
                                   }});
                  // Read-only: no look at subscriptions.
                  tools.push_back({"peek",
                                   "",
                                   "Changes one, claiming not to.",
                                   Schema(),
                                   nullptr,
                                   {{"readOnlyHint", true}},
                                   [this](ToolCall&, const Json& args) {
                                     resources->Touch(args["uri"].get<std::string>());
                                     return Json{{"content", Json::array()}};
                                   }});
                  return tools;
                }()};
  std::shared_ptr<Connection> connection = server.NewConnection();

  std::shared_ptr<CaptureReply> Send(const Json& message) {
    auto reply = std::make_shared<CaptureReply>();
    connection->Handle(message, reply);
    REQUIRE(reply->WaitClosed());
    return reply;
  }
  Json Request(const std::string& method, Json params = Json::object()) {
    return Send({{"jsonrpc", "2.0"}, {"id", ++id}, {"method", method}, {"params", params}})
        ->response();
  }
  void Initialize(const std::string& version = "2025-11-25") {
    Json response = Request("initialize", {{"protocolVersion", version}, {"capabilities", {}}});
    REQUIRE(response["result"]["protocolVersion"] == version);
  }
  // The notifications/resources/updated URIs a tool call sent ahead of its response.
  std::vector<std::string> CallAndCollectUpdates(const std::string& tool, const std::string& uri) {
    auto reply = Send({{"jsonrpc", "2.0"},
                       {"id", ++id},
                       {"method", "tools/call"},
                       {"params", {{"name", tool}, {"arguments", {{"uri", uri}}}}}});
    std::vector<std::string> uris;
    auto messages = reply->messages();
    for (size_t i = 0; i < messages.size(); ++i) {
      if (messages[i].value("method", "") == "notifications/resources/updated") {
        uris.push_back(messages[i]["params"]["uri"].get<std::string>());
        CHECK(i + 1 < messages.size());  // ahead of the response
      }
    }
    CHECK(reply->response().contains("result"));
    return uris;
  }
  int id = 0;
};

}  // namespace

TEST_CASE("resources: capabilities name subscribe and completions", "[unit]") {
  Fixture f;
  Json result = f.Request("initialize", {{"protocolVersion", "2025-11-25"}})["result"];
  CHECK(result["capabilities"]["resources"]["subscribe"] == true);
  CHECK(result["capabilities"]["resources"]["listChanged"] == false);
  CHECK(result["capabilities"]["completions"] == Json::object());
}

TEST_CASE("resources: templates, read of text and blob", "[unit]") {
  Fixture f;
  f.Initialize();
  CHECK(f.Request("resources/templates/list")["result"]["resourceTemplates"][0]["uriTemplate"] ==
        "mem://{n}");
  Json text = f.Request("resources/read", {{"uri", "mem://1"}})["result"]["contents"][0];
  CHECK(text["text"] == "content");
  Json blob = f.Request("resources/read", {{"uri", "mem://binary"}})["result"]["contents"][0];
  CHECK(blob["blob"] == "AAEC");
  CHECK(blob["mimeType"] == "image/png");
}

TEST_CASE("resources: errors are JSON-RPC errors with the revision's not-found code", "[unit]") {
  Fixture f;
  f.Initialize("2025-06-18");
  Json missing = f.Request("resources/read", {{"uri", "mem://99"}});
  CHECK(missing["error"]["code"] == kResourceNotFound);
  CHECK(missing["error"]["data"]["uri"] == "mem://99");
  CHECK(missing["error"]["data"]["error"] == "not_found");
  CHECK(f.Request("resources/read", {{"uri", "other://x"}})["error"]["code"] == kInvalidParams);
  CHECK(f.Request("resources/read", {{"uri", 5}})["error"]["code"] == kInvalidParams);
  CHECK(f.Request("resources/read")["error"]["code"] == kInvalidParams);
  // SEP-2164: from 2026-07-28 on, a missing resource is -32602.
  Error not_found = MakeError(ErrorCode::kNotFound, "gone");
  CHECK(ResourceErrorResponse(1, "x://", not_found, "2026-07-28")["error"]["code"] ==
        kInvalidParams);
  CHECK(ResourceErrorResponse(1, "x://", not_found, "2025-11-25")["error"]["code"] ==
        kResourceNotFound);
  // A long URI is quoted cut.
  Json long_uri = f.Request("resources/read", {{"uri", "mem://" + std::string(5000, 'a')}});
  CHECK(long_uri["error"]["data"]["uri"].get<std::string>().size() <= 256);
}

TEST_CASE("resources: list pages follow nextCursor, and a foreign cursor is -32602", "[unit]") {
  Fixture f;
  f.Initialize();
  std::vector<std::string> uris;
  Json params = Json::object();
  for (int page = 0; page < 10; ++page) {
    Json result = f.Request("resources/list", params)["result"];
    for (const auto& resource : result["resources"]) uris.push_back(resource["uri"]);
    if (!result.contains("nextCursor")) break;
    params = {{"cursor", result["nextCursor"]}};
  }
  CHECK(uris == std::vector<std::string>{"mem://0", "mem://1", "mem://2", "mem://3", "mem://4"});
  CHECK(f.Request("resources/list", {{"cursor", "bm9wZQ=="}})["error"]["code"] == kInvalidParams);
  CHECK(f.Request("resources/list", {{"cursor", 7}})["error"]["code"] == kInvalidParams);
  CHECK(f.Request("resources/templates/list", {{"cursor", "x"}})["error"]["code"] ==
        kInvalidParams);
}

TEST_CASE("resources: a write to a subscribed resource is announced once, ahead of the response",
          "[unit]") {
  Fixture f;
  f.Initialize();
  CHECK(f.Request("resources/subscribe", {{"uri", "mem://1"}})["result"] == Json::object());
  CHECK(f.Request("resources/subscribe", {{"uri", "mem://new"}})["result"] == Json::object());
  // Unrelated writes announce nothing; the subscribed one is announced, once.
  CHECK(f.CallAndCollectUpdates("touch", "mem://2").empty());
  CHECK(f.CallAndCollectUpdates("touch", "mem://1") == std::vector<std::string>{"mem://1"});
  CHECK(f.CallAndCollectUpdates("touch", "mem://2").empty());
  // A resource that did not exist when subscribed: its creation is a change.
  CHECK(f.CallAndCollectUpdates("touch", "mem://new") == std::vector<std::string>{"mem://new"});
  // Read-only tools are not followed by a look.
  CHECK(f.CallAndCollectUpdates("peek", "mem://1").empty());
  CHECK(f.CallAndCollectUpdates("touch", "mem://2") == std::vector<std::string>{"mem://1"});
  // While the resource cannot be looked at, nothing is said; the change comes out later.
  f.resources->SetBusy(true);
  CHECK(f.CallAndCollectUpdates("touch", "mem://1").empty());
  f.resources->SetBusy(false);
  CHECK(f.CallAndCollectUpdates("touch", "mem://2") == std::vector<std::string>{"mem://1"});
  // After unsubscribe, silence; unsubscribing twice is fine.
  CHECK(f.Request("resources/unsubscribe", {{"uri", "mem://1"}})["result"] == Json::object());
  CHECK(f.Request("resources/unsubscribe", {{"uri", "mem://1"}})["result"] == Json::object());
  CHECK(f.CallAndCollectUpdates("touch", "mem://1").empty());
  // Subscriptions are per connection.
  auto other = f.server.NewConnection();
  auto reply = std::make_shared<CaptureReply>();
  other->Handle({{"jsonrpc", "2.0"},
                 {"id", 1},
                 {"method", "tools/call"},
                 {"params", {{"name", "touch"}, {"arguments", {{"uri", "mem://new"}}}}}},
                reply);
  REQUIRE(reply->WaitClosed());
  CHECK(reply->messages().size() == 1);
}

TEST_CASE("resources: subscribe refuses what is not a resource, and past the cap", "[unit]") {
  Fixture f;
  f.Initialize();
  CHECK(f.Request("resources/subscribe", {{"uri", "other://x"}})["error"]["code"] ==
        kInvalidParams);
  CHECK(f.Request("resources/subscribe")["error"]["code"] == kInvalidParams);
  for (size_t i = 0; i < ResourceSubscriptions::kMaxSubscriptions; ++i) {
    REQUIRE(f.Request("resources/subscribe", {{"uri", "mem://s" + std::to_string(i)}})
                .contains("result"));
  }
  CHECK(f.Request("resources/subscribe", {{"uri", "mem://one-too-many"}})["error"]["code"] ==
        kInvalidParams);
  CHECK(f.Request("resources/subscribe", {{"uri", "mem://s0"}}).contains("result"));  // again
}

TEST_CASE("completion/complete offers template values, and none for prompts", "[unit]") {
  Fixture f;
  f.Initialize();
  Json completion =
      f.Request("completion/complete",
                {{"ref", {{"type", "ref/resource"}, {"uri", "mem://{n}"}}},
                 {"argument", {{"name", "n"}, {"value", "1"}}}})["result"]["completion"];
  CHECK(completion["values"] == Json::array({"1", "10"}));
  CHECK(completion["total"] == 2);
  CHECK(completion["hasMore"] == false);
  Json prompt =
      f.Request("completion/complete", {{"ref", {{"type", "ref/prompt"}, {"name", "p"}}},
                                        {"argument", {{"name", "a"}, {"value", ""}}}})["result"];
  CHECK(prompt["completion"]["values"] == Json::array());
  CHECK(f.Request("completion/complete",
                  {{"ref", {{"type", "ref/resource"}, {"uri", "mem://{n}"}}},
                   {"argument", {{"name", "nope"}, {"value", ""}}}})["error"]["code"] ==
        kInvalidParams);
  CHECK(f.Request("completion/complete",
                  {{"ref", {{"type", "ref/other"}}},
                   {"argument", {{"name", "n"}, {"value", ""}}}})["error"]["code"] ==
        kInvalidParams);
  CHECK(f.Request("completion/complete", {{"ref", 5}})["error"]["code"] == kInvalidParams);
  CHECK(f.Request("completion/complete",
                  {{"ref", {{"type", "ref/resource"}, {"uri", "mem://{n}"}}}})["error"]["code"] ==
        kInvalidParams);
}

}  // namespace resource_methods_test
