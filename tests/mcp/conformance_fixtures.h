// The fixture tools of @modelcontextprotocol/conformance's tools-call-* scenarios
// (test_simple_text, test_image_content, ...). Test-only: they are served by
// mcp-sandbox-conformance (conformance_server_main.cc), never by the product binary.
#pragma once

#include <vector>

#include "mcp/tool.h"

namespace sandbox::mcp {

// A 1x1 red PNG, for the image tool and the binary resource (the scenarios check only its
// shape).
inline constexpr char kConformancePng[] =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC";

std::vector<Tool> ConformanceFixtureTools();

}  // namespace sandbox::mcp
