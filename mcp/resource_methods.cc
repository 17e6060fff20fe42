// The dispatcher's resource methods: resources/list, resources/templates/list, resources/read,
// resources/subscribe and unsubscribe, completion/complete, and the updates sent after a tool
// call. Bound in Connection::Methods (server.cc) and served only when the server has a
// ResourceProvider. Those that may wait on a sandbox run on the worker pool, like tool calls.
#include <spdlog/spdlog.h>

#include "mcp/apps/ui_extension.h"
#include "mcp/server.h"
#include "runtime/base/quoted.h"

namespace sandbox::mcp {

namespace {

// The revision a request is answered by: its own _meta's (2026-07-28 on: no initialize), else
// the one the connection negotiated.
std::string VersionOf(const Reply& reply, std::string connection_version) {
  if (const ModernRequestMeta* modern = reply.modern()) return modern->protocol_version;
  return connection_version;
}

void SendAndClose(const std::shared_ptr<Reply>& reply, const Json& response) {
  reply->Send(response);
  reply->Close();
}

// params.uri as a string, or null.
const std::string* UriParam(const Json& params) {
  if (!params.is_object()) return nullptr;
  auto it = params.find("uri");
  return it != params.end() && it->is_string() ? &it->get_ref<const std::string&>() : nullptr;
}

}  // namespace

void Connection::OnResourcesList(Message& message, const std::shared_ptr<Reply>& reply, bool) {
  std::string cursor;
  if (message.params.is_object()) {
    if (auto it = message.params.find("cursor"); it != message.params.end() && !it->is_null()) {
      if (!it->is_string()) {
        return SendAndClose(reply, MakeErrorResponse(message.id, kInvalidParams,
                                                     "Invalid params: cursor must be a string"));
      }
      cursor = it->get<std::string>();
    }
  }
  auto provider = server_.options().resources;
  Json id = message.id;
  bool ui = DeclaresUi(*reply);
  RunAsync(message, reply, [provider, cursor, id, ui](const std::shared_ptr<InFlight>&) {
    auto page = provider->List(cursor);
    if (!page) {
      return MakeErrorResponse(id, kInvalidParams,
                               "Invalid params: " + ValidUtf8(page.error().message));
    }
    // The MCP Apps views lead the first page, for a client that declared the extension.
    if (ui && cursor.empty()) {
      Json views = apps::UiResourceList();
      page->resources.insert(page->resources.begin(), views.begin(), views.end());
    }
    Json result = {{"resources", std::move(page->resources)}};
    if (!page->next_cursor.empty()) result["nextCursor"] = page->next_cursor;
    return MakeResponse(id, std::move(result));
  });
}

void Connection::OnResourceTemplatesList(Message& message, const std::shared_ptr<Reply>& reply,
                                         bool) {
  if (message.params.is_object() && message.params.contains("cursor") &&
      !message.params["cursor"].is_null()) {
    return SendAndClose(
        reply, MakeErrorResponse(message.id, kInvalidParams, "Invalid params: unknown cursor"));
  }
  SendAndClose(
      reply,
      MakeResponse(message.id, {{"resourceTemplates", server_.options().resources->Templates()}}));
}

void Connection::OnResourcesRead(Message& message, const std::shared_ptr<Reply>& reply, bool) {
  const std::string* uri = UriParam(message.params);
  if (uri == nullptr) {
    return SendAndClose(reply, MakeErrorResponse(message.id, kInvalidParams,
                                                 "Invalid params: uri (a string) is required"));
  }
  if (DeclaresUi(*reply)) {
    if (auto view = apps::ReadUiResource(*uri)) {
      return SendAndClose(reply, MakeResponse(message.id, {{"contents", std::move(*view)}}));
    }
  }
  auto provider = server_.options().resources;
  std::string version = VersionOf(*reply, protocol_version());
  Json id = message.id;
  RunAsync(message, reply, [provider, uri = *uri, version, id](const std::shared_ptr<InFlight>&) {
    auto contents = provider->Read(uri);
    if (!contents) return ResourceErrorResponse(id, uri, contents.error(), version);
    return MakeResponse(id, {{"contents", std::move(*contents)}});
  });
}

void Connection::OnResourcesSubscribe(Message& message, const std::shared_ptr<Reply>& reply, bool) {
  const std::string* uri = UriParam(message.params);
  if (uri == nullptr) {
    return SendAndClose(reply, MakeErrorResponse(message.id, kInvalidParams,
                                                 "Invalid params: uri (a string) is required"));
  }
  // The subscriptions live as long as this connection: the task holds it.
  auto self = shared_from_this();
  std::string version = VersionOf(*reply, protocol_version());
  Json id = message.id;
  RunAsync(message, reply, [self, uri = *uri, version, id](const std::shared_ptr<InFlight>&) {
    auto subscribed = self->subscriptions_->Subscribe(uri);
    if (!subscribed) return ResourceErrorResponse(id, uri, subscribed.error(), version);
    return MakeResponse(id, Json::object());
  });
}

void Connection::OnResourcesUnsubscribe(Message& message, const std::shared_ptr<Reply>& reply,
                                        bool) {
  const std::string* uri = UriParam(message.params);
  if (uri == nullptr) {
    return SendAndClose(reply, MakeErrorResponse(message.id, kInvalidParams,
                                                 "Invalid params: uri (a string) is required"));
  }
  subscriptions_->Unsubscribe(*uri);
  SendAndClose(reply, MakeResponse(message.id, Json::object()));
}

void Connection::OnComplete(Message& message, const std::shared_ptr<Reply>& reply, bool) {
  const Json& params = message.params;
  auto invalid = [&](std::string_view text) {
    SendAndClose(reply, MakeErrorResponse(message.id, kInvalidParams,
                                          fmt::format("Invalid params: {}", text)));
  };
  if (!params.is_object() || !params.contains("ref") || !params["ref"].is_object() ||
      !params["ref"].contains("type") || !params["ref"]["type"].is_string()) {
    return invalid("ref (an object with a type) is required");
  }
  if (!params.contains("argument") || !params["argument"].is_object() ||
      !params["argument"].contains("name") || !params["argument"]["name"].is_string() ||
      !params["argument"].contains("value") || !params["argument"]["value"].is_string()) {
    return invalid("argument (an object with a name and a value, both strings) is required");
  }
  const Json& ref = params["ref"];
  std::string type = ref["type"].get<std::string>();
  if (type == "ref/prompt") {
    // This server has no prompts, so no prompt argument has values to offer.
    return SendAndClose(
        reply, MakeResponse(message.id,
                            {{"completion",
                              {{"values", Json::array()}, {"total", 0}, {"hasMore", false}}}}));
  }
  if (type != "ref/resource" || !ref.contains("uri") || !ref["uri"].is_string()) {
    return invalid(fmt::format("ref must be ref/resource (with a uri) or ref/prompt, not {}",
                               ValidUtf8(Quoted(type))));
  }
  Json context = nullptr;
  if (auto it = params.find("context"); it != params.end() && it->is_object()) {
    if (auto args = it->find("arguments"); args != it->end() && args->is_object()) context = *args;
  }
  auto provider = server_.options().resources;
  Json id = message.id;
  RunAsync(message, reply,
           [provider, uri_template = ref["uri"].get<std::string>(),
            argument = params["argument"]["name"].get<std::string>(),
            prefix = params["argument"]["value"].get<std::string>(), context,
            id](const std::shared_ptr<InFlight>&) {
             auto completion = provider->Complete(uri_template, argument, prefix, context);
             if (!completion) {
               return MakeErrorResponse(id, kInvalidParams,
                                        "Invalid params: " + ValidUtf8(completion.error().message));
             }
             Json values = Json::array();
             for (const auto& value : completion->values) values.push_back(ValidUtf8(value));
             return MakeResponse(id, {{"completion",
                                       {{"values", std::move(values)},
                                        {"total", completion->total},
                                        {"hasMore", completion->has_more}}}});
           });
}

void Connection::SendResourceUpdates(Reply& reply) {
  if (!subscriptions_ || subscriptions_->empty()) return;
  for (const auto& uri : subscriptions_->Changed()) {
    spdlog::debug("resource updated: {}", Quoted(uri));
    reply.Send(MakeNotification("notifications/resources/updated", {{"uri", uri}}));
  }
}

}  // namespace sandbox::mcp
