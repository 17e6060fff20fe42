// mcp-sandbox-conformance: `mcp-sandbox serve` plus the fixture tools the conformance suite's
// tools-call-* scenarios call (test_simple_text, test_image_content, ...) and the resources
// its resources-* scenarios read (test://static-text, ...). Test-only, so the
// product binary never lists them. Built next to mcp-sandbox, so it finds the same agent dir.
//
//   mcp-sandbox-conformance serve --http 127.0.0.1:0
#include <iostream>
#include <string>

#include "tests/mcp/conformance_fixtures.h"
#include "tests/mcp/conformance_resources.h"
#include "tools/cli/args.h"
#include "tools/cli/commands.h"

int main(int argc, char** argv) {
  if (argc < 2 || std::string(argv[1]) != "serve") {
    std::cerr << "usage: mcp-sandbox-conformance serve [serve's flags]\n";
    return sandbox::cli::kExitUsage;
  }
  sandbox::cli::Argv rest(argv + 2, argv + argc);
  return sandbox::cli::ServeCommand(rest, sandbox::mcp::ConformanceFixtureTools(),
                                    sandbox::mcp::ConformanceFixtureResources);
}
