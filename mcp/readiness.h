// GET /readyz: whether a proxy should place new sessions on this server. Unlike /healthz (the
// process serves), readiness falls while the server drains or is full, and a proxy's health
// check turns that into "no new placements, routed calls still flow" (HAProxy: `http-check
// disable-on-404`). The answer holds counts only, so it needs no authentication. Socket-free.
#pragma once

#include <cstddef>
#include <string>

namespace sandbox::mcp {

struct ReadinessFacts {
  bool starting = false;  // the start-up work (the warm pool's first sandbox) is not done
  bool draining = false;
  size_t sessions = 0;
  size_t max_sessions = 0;  // 0: no cap known
  std::string replica;      // "" on a single host
};

struct Readiness {
  int http_status = 200;  // 200 ready, 404 draining or full, 503 starting
  std::string status;     // "ready" | "draining" | "full" | "starting"
  std::string body;       // {"status","replica","sessions","max_sessions","draining"}
};

// Draining wins over starting and full: a draining replica must never look like one that will
// soon take sessions again.
Readiness JudgeReadiness(const ReadinessFacts& facts);

}  // namespace sandbox::mcp
