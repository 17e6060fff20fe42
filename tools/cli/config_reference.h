// The settings table (ConfigVariables) as the man page's ENVIRONMENT section; its Markdown
// twin for docs/configuration.md is ConfigTableMarkdown (config.h). Both come from the one table
// `serve` parses with, so no setting is documented in one place and missing in another
// (tests/docs/config_page_test.sh fails when the page or the man page is out of date).
#pragma once

#include <ostream>

namespace sandbox::cli {

// The man page's ENVIRONMENT section (roff): a .TP paragraph per variable.
void WriteSettingsRoff(std::ostream& out);

}  // namespace sandbox::cli
