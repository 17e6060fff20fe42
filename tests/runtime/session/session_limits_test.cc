// EffectiveLimits: a session's requests within the configured limits are taken, the rest are
// refused with the bound; the tmpfs sizes follow the session's memory limit.
#include "runtime/session/session_limits.h"

#include <catch2/catch.hpp>

namespace sandbox::session_limits_test {
namespace {

constexpr uint64_t kMiB = 1ull << 20;

Limits Configured() {
  Limits limits;
  limits.memory_bytes = 1024 * kMiB;
  limits.cpus = 2;
  limits.pids = 256;
  limits.disk_bytes = 400 * kMiB;
  limits.tmp_bytes = 256 * kMiB;
  return limits;
}

TEST_CASE("session limits: no request gives the configured limits", "[unit]") {
  auto limits = EffectiveLimits(Configured(), {});
  REQUIRE(limits);
  CHECK(limits->memory_bytes == 1024 * kMiB);
  CHECK(limits->cpus == 2);
  CHECK(limits->pids == 256);
  CHECK(limits->disk_bytes == 400 * kMiB);
  CHECK(limits->tmp_bytes == 256 * kMiB);
}

TEST_CASE("session limits: a smaller memory request shrinks the tmpfs sizes with it", "[unit]") {
  SessionOptions options;
  options.memory_bytes = 256 * kMiB;
  options.cpus = 0.5;
  options.pids = 64;
  auto limits = EffectiveLimits(Configured(), options);
  REQUIRE(limits);
  CHECK(limits->memory_bytes == 256 * kMiB);
  CHECK(limits->cpus == 0.5);
  CHECK(limits->pids == 64);
  CHECK(limits->disk_bytes == 128 * kMiB);  // at most half the memory
  CHECK(limits->tmp_bytes == TmpBytesFor(256 * kMiB));
}

TEST_CASE("session limits: a request above a maximum is refused with the bound", "[unit]") {
  SessionOptions memory;
  memory.memory_bytes = 2048 * kMiB;
  auto too_much = EffectiveLimits(Configured(), memory);
  REQUIRE_FALSE(too_much);
  CHECK(too_much.error().code == ErrorCode::kInvalidArgument);
  CHECK(too_much.error().message.find(std::to_string(1024 * kMiB)) != std::string::npos);

  SessionOptions cpus;
  cpus.cpus = 0;
  CHECK_FALSE(EffectiveLimits(Configured(), cpus));
  SessionOptions pids;
  pids.pids = 4;
  CHECK_FALSE(EffectiveLimits(Configured(), pids));

  SessionOptions disk;  // within the configured disk, but above half the memory asked for
  disk.memory_bytes = 256 * kMiB;
  disk.disk_bytes = 200 * kMiB;
  auto over_half = EffectiveLimits(Configured(), disk);
  REQUIRE_FALSE(over_half);
  CHECK(over_half.error().message.find("half the session's memory") != std::string::npos);
}

}  // namespace
}  // namespace sandbox::session_limits_test
