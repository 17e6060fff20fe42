// The traceparent a client sends in params._meta: taken only in the W3C shape, bounded.
#include "mcp/trace_context.h"

#include <string>

#include <catch2/catch.hpp>

namespace trace_context_test {

using namespace sandbox::mcp;

namespace {

constexpr char kValid[] = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";

TEST_CASE("traceparent: the W3C shape is taken, anything else is not [unit]", "[unit]") {
  CHECK(IsValidTraceparent(kValid));
  CHECK(IsValidTraceparent("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00"));
  // A later version may carry more after a dash.
  CHECK(IsValidTraceparent("01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-extra"));
  CHECK(IsValidTraceparent("01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"));
  for (const char* bad : {
           "",
           "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-0",     // short
           "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-x",  // v00 is exactly 55
           "00-0AF7651916CD43DD8448EB211C80319C-b7ad6b7169203331-01",    // upper case
           "00-00000000000000000000000000000000-b7ad6b7169203331-01",    // zero trace id
           "00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01",    // zero parent id
           "ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",    // forbidden version
           "00_0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",    // separator
           "01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01x",   // no dash after
           "01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-\"quote",
           "zz-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
       }) {
    INFO(bad);
    CHECK_FALSE(IsValidTraceparent(bad));
  }
  std::string longer = std::string("01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-") +
                       std::string(300, 'a');
  CHECK_FALSE(IsValidTraceparent(longer));  // bounded
}

TEST_CASE("traceparent: read from params._meta only when valid [unit]", "[unit]") {
  CHECK(TraceparentOf(Json{{"_meta", {{"traceparent", kValid}}}}) == kValid);
  CHECK(TraceparentOf(Json{{"_meta", {{"traceparent", "junk"}}}}).empty());
  CHECK(TraceparentOf(Json{{"_meta", {{"traceparent", 7}}}}).empty());
  CHECK(TraceparentOf(Json{{"_meta", "x"}}).empty());
  CHECK(TraceparentOf(Json{{"name", "t"}}).empty());
  CHECK(TraceparentOf(Json()).empty());
}

}  // namespace

}  // namespace trace_context_test
