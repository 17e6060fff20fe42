// The W3C Trace Context a client sends with a request (www.w3.org/TR/trace-context,
// `traceparent`), as MCP carries it in `params._meta.traceparent`: read, validated and bounded
// before it goes into a log line, so logs join up across the proxy and the replicas and a
// client cannot write what it likes into them.
#pragma once

#include <string>
#include <string_view>

#include "mcp/jsonrpc.h"

namespace sandbox::mcp {

// Whether `value` has the traceparent shape: version "00" as exactly
// 2 hex "-" 32 hex "-" 16 hex "-" 2 hex (lower case), trace id and parent id not all zero;
// a later version (not "ff") the same prefix, then nothing or "-" and more, 256 bytes at most.
bool IsValidTraceparent(std::string_view value);

// params._meta.traceparent when it is a valid one, else "".
std::string TraceparentOf(const Json& params);

}  // namespace sandbox::mcp
