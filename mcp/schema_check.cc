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

std::optional<std::string> Check(const Json& schema, const Json& value, const std::string& path) {
  if (!schema.is_object()) return std::nullopt;
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
  if (value.is_number()) {
    double v = value.get<double>();
    if (auto min = schema.find("minimum"); min != schema.end() && v < min->get<double>()) {
      return fmt::format("{} must be at least {}", Where(path), min->dump());
    }
    if (auto max = schema.find("maximum"); max != schema.end() && v > max->get<double>()) {
      return fmt::format("{} must be at most {}", Where(path), max->dump());
    }
    if (auto min = schema.find("exclusiveMinimum");
        min != schema.end() && v <= min->get<double>()) {
      return fmt::format("{} must be greater than {}", Where(path), min->dump());
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
        if (auto error = Check(*items, value[i], fmt::format("{}[{}]", path, i))) return error;
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
      if (auto error = Check(*child_schema, child_value, child)) return error;
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> CheckAgainstSchema(const Json& schema, const Json& value) {
  return Check(schema, value, "");
}

}  // namespace sandbox::mcp
