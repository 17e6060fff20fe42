// Checks tool arguments against the tools' own input schemas (a JSON Schema subset: type,
// properties, required, additionalProperties:false, enum, minimum/maximum, minLength/maxLength,
// items, minItems/maxItems). A failure becomes an invalid_argument tool error the model can
// correct, never a protocol error.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace sandbox::mcp {

// nullopt when `value` conforms; else one sentence naming the argument and the rule broken.
std::optional<std::string> CheckAgainstSchema(const nlohmann::json& schema,
                                              const nlohmann::json& value);

}  // namespace sandbox::mcp
