#include "tools/cli/config_reference.h"

#include <string>
#include <string_view>

#include "tools/cli/config.h"

namespace sandbox::cli {

namespace {

// roff text: a backslash starts an escape and '-' is a hyphen unless written \-; a line that
// starts with '.' or '\'' would be read as a request. Backticks (Markdown's code) are dropped.
std::string RoffText(std::string_view text) {
  std::string roff;
  for (char c : text) {
    if (c == '\\') {
      roff += "\\e";
    } else if (c == '-') {
      roff += "\\-";
    } else if (c != '`') {
      roff += c;
    }
  }
  if (!roff.empty() && (roff[0] == '.' || roff[0] == '\'')) roff.insert(0, "\\&");
  return roff;
}

}  // namespace

void WriteSettingsRoff(std::ostream& out) {
  out << ".SH ENVIRONMENT\n"
         "Each variable is also a flag of\n"
         ".BR serve ;\n"
         "flags win. A bad value stops the start with a message naming the variable.\n";
  for (const auto& variable : ConfigVariables()) {
    std::string text = RoffText(variable.meaning);
    if (variable.default_value[0] != '\0') {
      text += " (default " + RoffText(variable.default_value) + ")";
    }
    if (text.back() != '.') text += '.';
    out << ".TP\n.BR " << variable.env << " \", \" " << RoffText(variable.flag) << "\n"
        << text << "\n";
  }
}

}  // namespace sandbox::cli
