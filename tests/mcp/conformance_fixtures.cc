#include "tests/mcp/conformance_fixtures.h"

#include <chrono>
#include <thread>

#include "mcp/jsonrpc.h"

namespace sandbox::mcp {

namespace {

// Eight samples of 8 kHz silence, as the scenarios only check the shape.
constexpr char kWav[] = "UklGRiwAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQgAAACAgICAgICAgA==";

Tool Fixture(const char* name, const char* description,
             std::function<Json(ToolCall&, const Json&)> handler) {
  Tool tool;
  tool.name = name;
  tool.description = description;
  tool.input_schema = {{"type", "object"}, {"additionalProperties", false}};
  tool.handler = std::move(handler);
  return tool;
}

Json Content(Json blocks) { return {{"content", std::move(blocks)}}; }

}  // namespace

std::vector<Tool> ConformanceFixtureTools() {
  using namespace std::chrono_literals;
  std::vector<Tool> tools;
  tools.push_back(
      Fixture("test_simple_text", "Conformance fixture: text.", [](ToolCall&, const Json&) {
        return Content(
            {{{"type", "text"}, {"text", "This is a simple text response for testing."}}});
      }));
  tools.push_back(
      Fixture("test_image_content", "Conformance fixture: image.", [](ToolCall&, const Json&) {
        return Content({{{"type", "image"}, {"data", kConformancePng}, {"mimeType", "image/png"}}});
      }));
  tools.push_back(
      Fixture("test_audio_content", "Conformance fixture: audio.", [](ToolCall&, const Json&) {
        return Content({{{"type", "audio"}, {"data", kWav}, {"mimeType", "audio/wav"}}});
      }));
  tools.push_back(Fixture("test_embedded_resource", "Conformance fixture: embedded resource.",
                          [](ToolCall&, const Json&) {
                            return Content(
                                {{{"type", "resource"},
                                  {"resource",
                                   {{"uri", "test://embedded-resource"},
                                    {"mimeType", "text/plain"},
                                    {"text", "This is an embedded resource content."}}}}});
                          }));
  tools.push_back(Fixture(
      "test_multiple_content_types", "Conformance fixture: mixed content.",
      [](ToolCall&, const Json&) {
        return Content({{{"type", "text"}, {"text", "Multiple content types test:"}},
                        {{"type", "image"}, {"data", kConformancePng}, {"mimeType", "image/png"}},
                        {{"type", "resource"},
                         {"resource",
                          {{"uri", "test://mixed-content-resource"},
                           {"mimeType", "application/json"},
                           {"text", R"({"test":"data","value":123})"}}}}});
      }));
  tools.push_back(Fixture(
      "test_tool_with_logging", "Conformance fixture: logs three messages.",
      [](ToolCall& call, const Json&) {
        call.Log(LogLevel::kInfo, "Tool execution started");
        std::this_thread::sleep_for(50ms);
        call.Log(LogLevel::kInfo, "Tool processing data");
        std::this_thread::sleep_for(50ms);
        call.Log(LogLevel::kInfo, "Tool execution completed");
        return Content({{{"type", "text"}, {"text", "Tool with logging executed successfully"}}});
      }));
  tools.push_back(Fixture(
      "test_error_handling", "Conformance fixture: always fails.", [](ToolCall&, const Json&) {
        Json result = Content(
            {{{"type", "text"}, {"text", "This tool intentionally returns an error for testing"}}});
        result["isError"] = true;
        return result;
      }));
  tools.push_back(Fixture(
      "test_tool_with_progress", "Conformance fixture: progress 0, 50, 100.",
      [](ToolCall& call, const Json&) {
        call.ReportProgress(0, 100);
        std::this_thread::sleep_for(50ms);
        call.ReportProgress(50, 100);
        std::this_thread::sleep_for(50ms);
        call.ReportProgress(100, 100);
        return Content({{{"type", "text"}, {"text", "Tool with progress executed successfully"}}});
      }));
  // 2026-07-28 (server-stateless): a tool that needs a client capability the suite's request
  // does not declare, so the dispatcher must refuse it with -32021.
  Tool needs_sampling = Fixture("test_missing_capability",
                                "Conformance fixture: needs the client's sampling capability.",
                                [](ToolCall&, const Json&) {
                                  return Content({{{"type", "text"}, {"text", "sampled"}}});
                                });
  needs_sampling.required_client_capabilities = {{"sampling", Json::object()}};
  tools.push_back(std::move(needs_sampling));
  // server-stateless checks the response stream of this one holds no server requests: this
  // server sends none, so a plain answer is the whole stream.
  tools.push_back(Fixture("test_streaming_elicitation",
                          "Conformance fixture: answers on its response stream.",
                          [](ToolCall&, const Json&) {
                            return Content({{{"type", "text"}, {"text", "no input needed"}}});
                          }));
  // server-stateless: logs, which must not reach a client whose request set no logLevel.
  tools.push_back(Fixture("test_logging_tool", "Conformance fixture: logs one message.",
                          [](ToolCall& call, const Json&) {
                            call.Log(LogLevel::kInfo, "test_logging_tool ran");
                            return Content({{{"type", "text"}, {"text", "logged"}}});
                          }));
  // json-schema-2020-12: the suite's schema, listed verbatim and enforced as written.
  Tool schema_tool =
      Fixture("json_schema_2020_12_tool", "Tool with JSON Schema 2020-12 features",
              [](ToolCall&, const Json& arguments) {
                return Content({{{"type", "text"}, {"text", "accepted: " + arguments.dump()}}});
              });
  schema_tool.input_schema = Json::parse(R"({
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {"address": {"$anchor": "addressDef", "type": "object",
              "properties": {"street": {"type": "string"}, "city": {"type": "string"}}}},
    "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"},
                   "contactMethod": {"type": "string", "enum": ["phone", "email"]},
                   "phone": {"type": "string"}, "email": {"type": "string"}},
    "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
    "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
    "then": {"required": ["phone"]},
    "else": {"required": ["email"]},
    "additionalProperties": false})");
  tools.push_back(std::move(schema_tool));
  return tools;
}

}  // namespace sandbox::mcp
