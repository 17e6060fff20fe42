// A small flag parser shared by the subcommands: `--name value`, `--name=value`, boolean
// `--name`, positional arguments, and `--` to end flags. Usage errors exit 2 with one line.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace sandbox::cli {

class Args {
 public:
  // `value_flags` take a value; `bool_flags` do not. Anything else starting with "--" is a
  // usage error, reported by Parse().
  Args(std::string command, std::set<std::string> value_flags, std::set<std::string> bool_flags);

  // Returns false (after printing "mcp-sandbox CMD: ..." to stderr) on a usage error.
  bool Parse(const std::vector<std::string>& argv);

  bool Has(const std::string& flag) const { return values_.count(flag) > 0; }
  std::optional<std::string> Get(const std::string& flag) const;
  std::string GetOr(const std::string& flag, const std::string& fallback) const;
  const std::vector<std::string>& positional() const { return positional_; }

  // Prints "mcp-sandbox CMD: message" to stderr and returns exit code 2.
  int UsageError(const std::string& message) const;

 private:
  std::string command_;
  std::set<std::string> value_flags_;
  std::set<std::string> bool_flags_;
  std::map<std::string, std::string> values_;
  std::vector<std::string> positional_;
};

// Exit codes shared by every subcommand (docs/ci.md "Exit codes").
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitUsage = 2;

}  // namespace sandbox::cli
