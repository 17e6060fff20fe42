#include "runtime/base/pip_requirement.h"

#include <algorithm>
#include <cctype>
#include <string_view>

namespace sandbox {

bool IsPlainRequirement(const std::string& spec) {
  if (spec.empty() || spec.size() > 200 || !std::isalnum(static_cast<unsigned char>(spec[0]))) {
    return false;
  }
  return std::all_of(spec.begin(), spec.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) ||
           std::string_view("._-[],=<>!~*+").find(c) != std::string_view::npos;
  });
}

}  // namespace sandbox
