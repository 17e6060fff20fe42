#include "tests/mcp/conformance_resources.h"

#include <string>

#include "tests/mcp/conformance_fixtures.h"

namespace sandbox::mcp {

namespace {

constexpr char kTemplate[] = "test://template/{id}/data";
constexpr std::string_view kTemplatePrefix = "test://template/";
constexpr std::string_view kTemplateSuffix = "/data";

class FixtureResources : public ResourceProvider {
 public:
  explicit FixtureResources(std::shared_ptr<ResourceProvider> sessions)
      : sessions_(std::move(sessions)) {}

  Json Templates() override {
    Json templates = sessions_->Templates();
    templates.push_back({{"uriTemplate", kTemplate},
                         {"name", "test-template"},
                         {"description", "Conformance fixture: a template."},
                         {"mimeType", "application/json"}});
    return templates;
  }

  Result<ResourcePage> List(const std::string& cursor) override {
    SBX_ASSIGN_OR_RETURN(ResourcePage page, sessions_->List(cursor));
    if (cursor.empty()) {
      Json fixtures = Json::array(
          {{{"uri", "test://static-text"}, {"name", "static-text"}, {"mimeType", "text/plain"}},
           {{"uri", "test://static-binary"}, {"name", "static-binary"}, {"mimeType", "image/png"}},
           {{"uri", "test://watched-resource"},
            {"name", "watched-resource"},
            {"mimeType", "text/plain"}}});
      for (auto& resource : page.resources) fixtures.push_back(std::move(resource));
      page.resources = std::move(fixtures);
    }
    return page;
  }

  Result<Json> Read(const std::string& uri) override {
    if (uri == "test://static-text") {
      return Json::array({{{"uri", uri},
                           {"mimeType", "text/plain"},
                           {"text", "This is the content of the static text resource."}}});
    }
    if (uri == "test://static-binary") {
      return Json::array({{{"uri", uri}, {"mimeType", "image/png"}, {"blob", kConformancePng}}});
    }
    if (uri == "test://watched-resource") {
      return Json::array(
          {{{"uri", uri}, {"mimeType", "text/plain"}, {"text", "Watched resource content"}}});
    }
    if (auto id = TemplateId(uri)) {
      return Json::array({{{"uri", uri},
                           {"mimeType", "application/json"},
                           {"text", Json{{"id", *id}, {"templateTest", true}}.dump()}}});
    }
    if (uri.rfind("test://", 0) == 0) return Fail(ErrorCode::kNotFound, "no resource {}", uri);
    return sessions_->Read(uri);
  }

  Result<CompletionValues> Complete(const std::string& uri_template, const std::string& argument,
                                    const std::string& prefix, const Json& context) override {
    if (uri_template != kTemplate) {
      return sessions_->Complete(uri_template, argument, prefix, context);
    }
    CompletionValues completion;
    for (const char* id : {"123", "456"}) {
      if (std::string(id).rfind(prefix, 0) == 0) completion.values.push_back(id);
    }
    completion.total = completion.values.size();
    return completion;
  }

  Result<std::string> Version(const std::string& uri) override {
    if (uri.rfind("test://", 0) == 0) return std::string("fixed");
    return sessions_->Version(uri);
  }

 private:
  static std::optional<std::string> TemplateId(std::string_view uri) {
    if (uri.size() <= kTemplatePrefix.size() + kTemplateSuffix.size() ||
        uri.substr(0, kTemplatePrefix.size()) != kTemplatePrefix ||
        uri.substr(uri.size() - kTemplateSuffix.size()) != kTemplateSuffix) {
      return std::nullopt;
    }
    std::string_view id = uri.substr(kTemplatePrefix.size(),
                                     uri.size() - kTemplatePrefix.size() - kTemplateSuffix.size());
    if (id.find('/') != std::string_view::npos) return std::nullopt;
    return std::string(id);
  }

  std::shared_ptr<ResourceProvider> sessions_;
};

}  // namespace

std::shared_ptr<ResourceProvider> ConformanceFixtureResources(
    std::shared_ptr<ResourceProvider> sessions) {
  return std::make_shared<FixtureResources>(std::move(sessions));
}

}  // namespace sandbox::mcp
