#include "runtime/base/library_on_demand.h"

#include <cstring>

#include <catch2/catch.hpp>

namespace library_on_demand_test {

using sandbox::LibraryOnDemand;

TEST_CASE("library on demand: entry points of a library that opens are bound and callable",
          "[unit]") {
  LibraryOnDemand libc("libc.so.6");
  decltype(&::strlen) length = nullptr;
  libc.Bind("strlen", length);
  REQUIRE(libc.error().empty());
  REQUIRE(length != nullptr);
  CHECK(length("sandbox") == 7);
}

TEST_CASE("library on demand: a missing library says why and binds nothing", "[unit]") {
  LibraryOnDemand missing("libmcp-sandbox-no-such-library.so.0");
  decltype(&::strlen) length = nullptr;
  missing.Bind("strlen", length);
  CHECK(length == nullptr);
  CHECK(missing.error().find("libmcp-sandbox-no-such-library.so.0") != std::string::npos);
}

TEST_CASE("library on demand: the first missing symbol is the error, later binds are skipped",
          "[unit]") {
  LibraryOnDemand libc("libc.so.6");
  decltype(&::strlen) absent = nullptr;
  decltype(&::strlen) length = nullptr;
  libc.Bind("mcp_sandbox_no_such_symbol", absent);
  libc.Bind("strlen", length);
  CHECK(absent == nullptr);
  CHECK(length == nullptr);  // a half-bound library is never used: nothing after the failure
  CHECK(libc.error() == "libc.so.6 lacks mcp_sandbox_no_such_symbol");
}

}  // namespace library_on_demand_test
