// MIME types of artifacts, guessed from the file name's extension (the agent never sniffs
// content: it reports what a browser or MCP client would assume from the name).
#pragma once

#include <string_view>

namespace sandbox::agent {

// "image/png" for "chart.PNG"; "application/octet-stream" when the extension is unknown.
std::string_view MimeTypeForPath(std::string_view path);

}  // namespace sandbox::agent
