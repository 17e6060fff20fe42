// Checks tool arguments against the tools' own input schemas (JSON Schema 2020-12, the default
// dialect since MCP 2025-11-25; the subset tools use: type, properties, required,
// additionalProperties:false, enum, const, minimum/maximum and the exclusive forms,
// minLength/maxLength, items, minItems/maxItems, $ref to $defs or an $anchor of the same
// schema, allOf/anyOf/oneOf/not, if/then/else; other keywords are annotations). A failure becomes
// an invalid_argument tool error the model can correct, never a protocol error.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace sandbox::mcp {

// nullopt when `value` conforms; else one sentence naming the argument and the rule broken.
std::optional<std::string> CheckAgainstSchema(const nlohmann::json& schema,
                                              const nlohmann::json& value);

}  // namespace sandbox::mcp
