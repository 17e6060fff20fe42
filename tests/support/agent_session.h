// One agent on the host for the agent's own tests: sandbox-init (LocalAgent) over a socketpair
// with fresh data and tmp dirs. The tests add the helpers they need on top.
#pragma once

#include <memory>
#include <string>

#include <catch2/catch.hpp>

#include "runtime/base/files.h"
#include "tests/support/local_agent.h"
#include "tests/support/test_support.h"

namespace sandbox::testing {

struct AgentSession {
  explicit AgentSession(LocalAgentOptions options = {}) {
    data = dir.Join("data");
    tmp = dir.Join("tmp");
    REQUIRE(MakeDirs(data));
    REQUIRE(MakeDirs(tmp));
    options.data_dir = data;
    options.tmp_dir = tmp;
    auto started = LocalAgent::Start(options);
    if (!started) FAIL("sandbox-init did not start: " << started.error().message);
    agent = std::move(*started);
  }

  TempDir dir;
  std::string data;
  std::string tmp;
  std::unique_ptr<LocalAgent> agent;
};

}  // namespace sandbox::testing
