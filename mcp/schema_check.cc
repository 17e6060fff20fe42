#include "mcp/schema_check.h"

#include <cmath>

#include <fmt/format.h>

#include "runtime/base/quoted.h"

namespace sandbox::mcp {

namespace {

using Json = nlohmann::json;

bool HasType(const Json& value, const std::string& type) {
  if (type == "string") return value.is_string();
  if (type == "integer") {
    if (value.is_number_integer()) return true;
    // 3.0 is an integer in JSON Schema.
    if (!value.is_number_float()) return false;
    double d = value.get<double>();
    return std::isfinite(d) && std::floor(d) == d && std::fabs(d) < 9e15;
  }
  if (type == "number") return value.is_number();
  if (type == "boolean") return value.is_boolean();
  if (type == "array") return value.is_array();
  if (type == "object") return value.is_object();
  if (type == "null") return value.is_null();
  return false;
}

std::string TypeNames(const Json& type) {
  if (type.is_string()) return type.get<std::string>();
  std::string names;
  for (const auto& t : type) {
    if (!names.empty()) names += " or ";
    names += t.get<std::string>();
  }
  return names;
}

std::string Where(const std::string& path) {
  // Names come from the client's arguments: quoted cut (runtime/base/quoted.h).
  return path.empty() ? "the arguments" : fmt::format("argument {}", Quoted(path, 128));
}

// $ref nesting and cycles ("a": {"$ref": "#/$defs/a"}) end here; deeper counts as valid, as a
// schema is the server's own and values are depth-capped at parse time.
constexpr int kMaxDepth = 64;

// Finds the subschema with "$anchor": `name` anywhere under `node`.
const Json* FindAnchor(const Json& node, const std::string& name) {
  if (node.is_object()) {
    if (auto anchor = node.find("$anchor");
        anchor != node.end() && anchor->is_string() && *anchor == name) {
      return &node;
    }
  }
  if (node.is_structured()) {
    for (const auto& child : node) {
      if (const Json* found = FindAnchor(child, name)) return found;
    }
  }
  return nullptr;
}

// A $ref inside the same document: a JSON pointer ("#/$defs/address") or an anchor
// ("#addressDef"). nullptr when it does not resolve (remote references are not fetched).
const Json* Resolve(const Json& root, const std::string& ref) {
  if (ref == "#") return &root;
  if (ref.rfind("#/", 0) == 0) {
    try {
      const Json& target = root.at(Json::json_pointer(ref.substr(1)));
      return &target;
    } catch (const std::exception&) {
      return nullptr;
    }
  }
  if (ref.size() > 1 && ref[0] == '#') return FindAnchor(root, ref.substr(1));
  return nullptr;
}

std::optional<std::string> Check(const Json& schema, const Json& value, const std::string& path,
                                 const Json& root, int depth);

// allOf / anyOf / oneOf / not and if / then / else (JSON Schema 2020-12 applicators).
std::optional<std::string> CheckApplicators(const Json& schema, const Json& value,
                                            const std::string& path, const Json& root, int depth) {
  if (auto ref = schema.find("$ref"); ref != schema.end() && ref->is_string()) {
    if (const Json* target = Resolve(root, ref->get<std::string>())) {
      if (auto error = Check(*target, value, path, root, depth + 1)) return error;
    }
  }
  if (auto all = schema.find("allOf"); all != schema.end() && all->is_array()) {
    for (const auto& sub : *all) {
      if (auto error = Check(sub, value, path, root, depth + 1)) return error;
    }
  }
  if (auto any = schema.find("anyOf"); any != schema.end() && any->is_array() && !any->empty()) {
    std::string reasons;
    bool matched = false;
    for (const auto& sub : *any) {
      auto error = Check(sub, value, path, root, depth + 1);
      if (!error) {
        matched = true;
        break;
      }
      reasons += reasons.empty() ? *error : "; or " + *error;
    }
    if (!matched) return fmt::format("{} must satisfy one of: {}", Where(path), reasons);
  }
  if (auto one = schema.find("oneOf"); one != schema.end() && one->is_array()) {
    size_t matches = 0;
    for (const auto& sub : *one) matches += Check(sub, value, path, root, depth + 1) ? 0 : 1;
    if (matches != 1) {
      return fmt::format("{} must satisfy exactly one of {} alternatives ({} do)", Where(path),
                         one->size(), matches);
    }
  }
  if (auto negated = schema.find("not"); negated != schema.end()) {
    if (!Check(*negated, value, path, root, depth + 1)) {
      return fmt::format("{} matches a form this tool refuses ({})", Where(path), negated->dump());
    }
  }
  if (auto condition = schema.find("if"); condition != schema.end()) {
    bool holds = !Check(*condition, value, path, root, depth + 1);
    auto branch = schema.find(holds ? "then" : "else");
    if (branch != schema.end()) {
      if (auto error = Check(*branch, value, path, root, depth + 1)) return error;
    }
  }
  return std::nullopt;
}

std::optional<std::string> Check(const Json& schema, const Json& value, const std::string& path,
                                 const Json& root, int depth) {
  if (schema.is_boolean() && !schema.get<bool>()) {
    return fmt::format("{} is not allowed here", Where(path));
  }
  if (!schema.is_object() || depth > kMaxDepth) return std::nullopt;
  if (auto type = schema.find("type"); type != schema.end()) {
    bool ok = false;
    if (type->is_string()) {
      ok = HasType(value, type->get<std::string>());
    } else if (type->is_array()) {
      for (const auto& t : *type)
        ok = ok || (t.is_string() && HasType(value, t.get<std::string>()));
    }
    if (!ok) return fmt::format("{} must be of type {}", Where(path), TypeNames(*type));
  }
  if (auto choices = schema.find("enum"); choices != schema.end() && choices->is_array()) {
    bool found = false;
    for (const auto& choice : *choices) found = found || choice == value;
    if (!found) return fmt::format("{} must be one of {}", Where(path), choices->dump());
  }
  if (auto constant = schema.find("const"); constant != schema.end() && *constant != value) {
    return fmt::format("{} must be {}", Where(path), constant->dump());
  }
  if (value.is_number()) {
    double v = value.get<double>();
    if (auto min = schema.find("minimum"); min != schema.end() && v < min->get<double>()) {
      return fmt::format("{} must be at least {}", Where(path), min->dump());
    }
    if (auto max = schema.find("maximum"); max != schema.end() && v > max->get<double>()) {
      return fmt::format("{} must be at most {}", Where(path), max->dump());
    }
    if (auto min = schema.find("exclusiveMinimum");
        min != schema.end() && min->is_number() && v <= min->get<double>()) {
      return fmt::format("{} must be greater than {}", Where(path), min->dump());
    }
    if (auto max = schema.find("exclusiveMaximum");
        max != schema.end() && max->is_number() && v >= max->get<double>()) {
      return fmt::format("{} must be less than {}", Where(path), max->dump());
    }
  }
  if (value.is_string()) {
    size_t length = value.get_ref<const std::string&>().size();
    if (auto min = schema.find("minLength"); min != schema.end() && length < min->get<size_t>()) {
      return fmt::format("{} must not be empty", Where(path));
    }
    // maxLength counts characters in JSON Schema; bytes are a safe upper bound for a limit.
    if (auto max = schema.find("maxLength"); max != schema.end() && length > max->get<size_t>()) {
      return fmt::format("{} is longer than {} characters", Where(path), max->dump());
    }
  }
  if (value.is_array()) {
    if (auto min = schema.find("minItems");
        min != schema.end() && value.size() < min->get<size_t>()) {
      return fmt::format("{} needs at least {} item(s)", Where(path), min->dump());
    }
    if (auto max = schema.find("maxItems");
        max != schema.end() && value.size() > max->get<size_t>()) {
      return fmt::format("{} takes at most {} items", Where(path), max->dump());
    }
    if (auto items = schema.find("items"); items != schema.end()) {
      for (size_t i = 0; i < value.size(); ++i) {
        if (auto error = Check(*items, value[i], fmt::format("{}[{}]", path, i), root, depth + 1))
          return error;
      }
    }
  }
  if (value.is_object()) {
    const Json empty = Json::object();
    auto props_it = schema.find("properties");
    const Json& properties = props_it != schema.end() ? *props_it : empty;
    if (auto required = schema.find("required"); required != schema.end()) {
      for (const auto& name : *required) {
        if (!value.contains(name.get<std::string>())) {
          std::string child =
              path.empty() ? name.get<std::string>() : path + "." + name.get<std::string>();
          return fmt::format("argument {} is required", Quoted(child, 128));
        }
      }
    }
    auto additional = schema.find("additionalProperties");
    bool closed =
        additional != schema.end() && additional->is_boolean() && !additional->get<bool>();
    for (const auto& [name, child_value] : value.items()) {
      std::string child = path.empty() ? name : path + "." + name;
      auto child_schema = properties.find(name);
      if (child_schema == properties.end()) {
        if (closed) {
          std::string known;
          for (const auto& [known_name, unused] : properties.items()) {
            known += known.empty() ? known_name : ", " + known_name;
          }
          return fmt::format("unknown argument {} (this tool takes: {})", Quoted(child, 128),
                             known.empty() ? "no arguments" : known);
        }
        continue;
      }
      if (auto error = Check(*child_schema, child_value, child, root, depth + 1)) return error;
    }
  }
  return CheckApplicators(schema, value, path, root, depth);
}

}  // namespace

std::optional<std::string> CheckAgainstSchema(const Json& schema, const Json& value) {
  return Check(schema, value, "", schema, 0);
}

}  // namespace sandbox::mcp
