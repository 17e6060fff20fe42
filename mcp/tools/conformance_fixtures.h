// The fixture tools of @modelcontextprotocol/conformance's tools-call-* scenarios
// (test_simple_text, test_image_content, ...), registered by the hidden test-only flag
// `serve --conformance-fixtures`. Never part of a normal server's tool list.
#pragma once

#include <vector>

#include "mcp/tool.h"

namespace sandbox::mcp {

std::vector<Tool> ConformanceFixtureTools();

}  // namespace sandbox::mcp
