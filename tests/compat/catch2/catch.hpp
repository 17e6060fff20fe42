// Catch2 3 under the Catch2 v2 name every test includes: tests/CMakeLists.txt puts this folder
// on the include path only when the Catch2 it finds is version 3 (Debian 13; Debian 12 has v2),
// so one test source builds against both. v3 split the single header and moved the string
// matchers into Catch::Matchers (Contains became ContainsSubstring): the aliases below give the
// tests v2's spelling, and v2's global Approx (v3 has it in Catch only). Catch2 3 has no
// catch.hpp of its own, so nothing is shadowed.
#pragma once

#include <string>

#include <catch2/catch_all.hpp>

namespace Catch {
inline Matchers::StringContainsMatcher Contains(const std::string& text,
                                                CaseSensitive cs = CaseSensitive::Yes) {
  return Matchers::ContainsSubstring(text, cs);
}
using Matchers::EndsWith;
using Matchers::StartsWith;
}  // namespace Catch

using Catch::Approx;
