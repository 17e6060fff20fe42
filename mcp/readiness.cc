#include "mcp/readiness.h"

#include "mcp/jsonrpc.h"

namespace sandbox::mcp {

Readiness JudgeReadiness(const ReadinessFacts& facts) {
  Readiness readiness;
  if (facts.draining) {
    readiness = {404, "draining", ""};
  } else if (facts.starting) {
    readiness = {503, "starting", ""};
  } else if (facts.max_sessions > 0 && facts.sessions >= facts.max_sessions) {
    readiness = {404, "full", ""};
  } else {
    readiness = {200, "ready", ""};
  }
  Json body = {{"status", readiness.status},
               {"sessions", facts.sessions},
               {"max_sessions", facts.max_sessions},
               {"draining", facts.draining}};
  if (!facts.replica.empty()) body["replica"] = facts.replica;
  readiness.body = Serialize(body);
  return readiness;
}

}  // namespace sandbox::mcp
