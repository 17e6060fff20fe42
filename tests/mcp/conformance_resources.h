// The fixture resources of @modelcontextprotocol/conformance's resources-* scenarios
// (test://static-text, test://static-binary, the template test://template/{id}/data,
// test://watched-resource), served beside the session files by mcp-sandbox-conformance.
// Test-only, like the fixture tools.
#pragma once

#include <memory>

#include "mcp/resources.h"

namespace sandbox::mcp {

// The fixtures first; every other URI, template and cursor goes to `sessions`.
std::shared_ptr<ResourceProvider> ConformanceFixtureResources(
    std::shared_ptr<ResourceProvider> sessions);

}  // namespace sandbox::mcp
