#include "tools/cli/args.h"

#include <iostream>

namespace sandbox::cli {

Args::Args(std::string command, std::set<std::string> value_flags, std::set<std::string> bool_flags)
    : command_(std::move(command)),
      value_flags_(std::move(value_flags)),
      bool_flags_(std::move(bool_flags)) {
  bool_flags_.insert("--help");
}

bool Args::Parse(const std::vector<std::string>& argv) {
  for (size_t i = 0; i < argv.size(); ++i) {
    const std::string& arg = argv[i];
    if (arg == "--") {
      positional_.insert(positional_.end(), argv.begin() + static_cast<long>(i) + 1, argv.end());
      return true;
    }
    if (arg == "-h") {
      values_["--help"] = "";
      continue;
    }
    if (arg.rfind("--", 0) != 0 || arg == "-") {
      positional_.push_back(arg);
      continue;
    }
    std::string name = arg;
    std::optional<std::string> value;
    if (auto eq = arg.find('='); eq != std::string::npos) {
      name = arg.substr(0, eq);
      value = arg.substr(eq + 1);
    }
    if (bool_flags_.count(name) > 0) {
      if (value) {
        UsageError("flag " + name + " takes no value");
        return false;
      }
      values_[name] = "";
    } else if (value_flags_.count(name) > 0) {
      if (!value) {
        if (i + 1 >= argv.size()) {
          UsageError("flag " + name + " needs a value");
          return false;
        }
        value = argv[++i];
      }
      values_[name] = *value;
    } else {
      UsageError("unknown flag " + name + " (see --help)");
      return false;
    }
  }
  return true;
}

std::optional<std::string> Args::Get(const std::string& flag) const {
  auto it = values_.find(flag);
  if (it == values_.end()) return std::nullopt;
  return it->second;
}

std::string Args::GetOr(const std::string& flag, const std::string& fallback) const {
  auto value = Get(flag);
  return value ? *value : fallback;
}

int Args::UsageError(const std::string& message) const {
  std::cerr << "mcp-sandbox " << command_ << ": " << message << "\n";
  return kExitUsage;
}

}  // namespace sandbox::cli
