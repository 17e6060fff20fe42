// Errors of the Docker Engine API: a status code and a JSON body {"message": "..."}.
#pragma once

#include <string_view>

#include "runtime/base/result.h"

namespace sandbox::docker {

// An Error for a failed API call: "<what>: Docker daemon answered <status>: <message>".
// 404 maps to kNotFound (missing image or container); anything else to kSandboxUnavailable.
Error EngineError(std::string_view what, long status, std::string_view body);

}  // namespace sandbox::docker
