// Sessions belong to the subject that created them: another subject naming one gets, word for
// word, what an unknown id gets; lists show one's own; per-subject quotas hold for one subject
// without touching another. Over HostBackend (sandbox-init on the host): real sessions, seconds.
#include "runtime/session/session_owner.h"

#include <chrono>
#include <memory>
#include <string>

#include <catch2/catch.hpp>

#include "runtime/session/session_manager.h"
#include "tests/support/host_backend.h"
#include "tests/support/session_support.h"
#include "tests/support/test_support.h"

namespace sandbox::session_owner_test {
namespace {

std::unique_ptr<SessionManager> Manager(SubjectQuota quota) {
  SessionConfig config;
  config.default_image = "host";
  config.max_sessions = 6;
  config.exec_timeout_s = 30;
  config.max_code_bytes = 4096;
  config.max_output_bytes = 1000;
  config.subject_quota = quota;
  return std::make_unique<SessionManager>(config, std::make_shared<testing::HostBackend>(),
                                          testing::HostImageResolver());
}

std::string Create(SessionManager& manager, const std::string& subject,
                   SessionOptions options = {}) {
  ActingSubject acting(subject);
  auto info = manager.Create(options);
  REQUIRE(info);
  return info->id;
}

// The error for `id`, with the id itself blanked so two answers can be compared.
std::string Blanked(const Error& error, const std::string& id) {
  std::string message = error.message;
  if (auto at = message.find(id); at != std::string::npos) message.replace(at, id.size(), "<id>");
  return message;
}

}  // namespace

TEST_CASE("session owner: scopes nest, and outside every scope nothing is filtered", "[unit]") {
  CHECK(ActingSubject::Current() == nullptr);
  CHECK(ActingSubject::MaySee("token:alice"));
  {
    ActingSubject alice("token:alice");
    CHECK(*ActingSubject::Current() == "token:alice");
    CHECK_FALSE(ActingSubject::MaySee("token:bob"));
    {
      ActingSubject bob("token:bob");
      CHECK(ActingSubject::MaySee("token:bob"));
    }
    CHECK(*ActingSubject::Current() == "token:alice");
  }
  CHECK(ActingSubject::Current() == nullptr);
}

TEST_CASE("session owner: memory and CPU asks are fitted to a subject's quota", "[unit]") {
  Limits defaults;
  defaults.memory_bytes = 1ull << 30;
  defaults.cpus = 2;
  SubjectQuota quota{.max_sessions = 0, .max_memory_bytes = 256ull << 20, .max_cpus = 1};
  std::optional<uint64_t> memory;
  std::optional<double> cpus;
  REQUIRE(FitToQuota(quota, defaults, memory, cpus));
  CHECK(memory == (256ull << 20));  // the default, lowered to the quota
  CHECK(cpus == 1.0);
  std::optional<uint64_t> big = 512ull << 20;
  auto refused = FitToQuota(quota, defaults, big, cpus);
  REQUIRE_FALSE(refused);
  CHECK_THAT(refused.error().message, Catch::Contains("SANDBOX_SUBJECT_MAX_MEMORY"));
  std::optional<double> many = 1.5;
  CHECK_FALSE(FitToQuota(quota, defaults, memory, many));
  std::optional<uint64_t> none;
  std::optional<double> no_cpus;
  REQUIRE(FitToQuota({}, defaults, none, no_cpus));  // no quota: nothing changes
  CHECK_FALSE(none);
  CHECK_FALSE(no_cpus);
}

TEST_CASE("session owner: another subject's session is answered as an unknown one", "[unit]") {
  auto manager = Manager({});
  std::string alices = Create(*manager, "token:alice");
  std::string bobs = Create(*manager, "token:bob");
  std::string unknown = "sess_0123456789abcdef0123456789abcdef";

  ActingSubject bob("token:bob");
  auto got = manager->Get(alices);
  REQUIRE_FALSE(got);
  auto none = manager->Get(unknown);
  REQUIRE_FALSE(none);
  CHECK(got.error().code == ErrorCode::kSessionNotFound);
  CHECK(Blanked(got.error(), alices) == Blanked(none.error(), unknown));
  RunRequest request;
  request.code = "print('hi')";
  request.timeout_s = 10;
  auto ran = manager->Run(alices, request);
  REQUIRE_FALSE(ran);
  CHECK(ran.error().code == ErrorCode::kSessionNotFound);
  CHECK_FALSE(manager->ReadFile(alices, "/mnt/data/x", 100));
  CHECK_FALSE(manager->WriteFile(alices, "/mnt/data/x", "evil", true));
  CHECK_FALSE(manager->ListFiles(alices, "/mnt/data", false));
  auto closed = manager->Close(alices, /*force=*/true);
  REQUIRE_FALSE(closed);
  CHECK(closed.error().code == ErrorCode::kSessionNotFound);
  auto listed = manager->List();
  REQUIRE(listed.size() == 1);
  CHECK(listed[0].id == bobs);
  // Bob's own session works as ever.
  auto own = manager->Run(bobs, request);
  REQUIRE(own);
  CHECK(own->stdout_text.find("hi") != std::string::npos);
  {
    // Alice's session is untouched by all of that.
    ActingSubject alice("token:alice");
    REQUIRE(manager->Get(alices));
    CHECK(manager->List().size() == 1);
  }
}

TEST_CASE("session owner: a subject at its session quota is refused, others are not", "[unit]") {
  auto manager = Manager({.max_sessions = 2, .max_memory_bytes = 0, .max_cpus = 0});
  Create(*manager, "token:alice");
  Create(*manager, "token:alice");
  {
    ActingSubject alice("token:alice");
    auto third = manager->Create({});
    REQUIRE_FALSE(third);
    CHECK(third.error().code == ErrorCode::kMaxSessions);
    CHECK_THAT(third.error().message, Catch::Contains("SANDBOX_SUBJECT_MAX_SESSIONS"));
  }
  Create(*manager, "token:bob");
  Create(*manager, "token:bob");
  // The single user (no subject scope, or the unnamed one) is held to the server's cap only.
  Create(*manager, "");
  CHECK(manager->SessionCount() == 5);
}

TEST_CASE("session owner: a hibernated session stays its owner's, and only its owner resumes it",
          "[unit]") {
  testing::TempDir state;
  SessionConfig config;
  config.default_image = "host";
  config.state_dir = state.path();
  config.max_sessions = 6;
  config.exec_timeout_s = 30;
  config.hibernate_after = std::chrono::minutes(10);
  auto backend = std::make_shared<testing::HostBackend>();
  SessionManager manager(config, backend, testing::HostImageResolver());
  RunRequest request;
  request.timeout_s = 20;

  std::string alices = Create(manager, "token:alice");
  {
    ActingSubject alice("token:alice");
    request.code = "x = 41";
    REQUIRE(manager.Run(alices, request));
  }
  REQUIRE(manager.Hibernate(alices));  // as the reaper does: no subject
  const size_t sandboxes = backend->started().size();
  std::string unknown = "sess_0123456789abcdef0123456789abcdef";
  {
    ActingSubject bob("token:bob");
    auto got = manager.Get(alices);
    REQUIRE_FALSE(got);
    CHECK(Blanked(got.error(), alices) == Blanked(manager.Get(unknown).error(), unknown));
    request.code = "print(x)";
    auto ran = manager.Run(alices, request);
    REQUIRE_FALSE(ran);
    CHECK(ran.error().code == ErrorCode::kSessionNotFound);
    CHECK(manager.Close(alices, /*force=*/true).error().code == ErrorCode::kSessionNotFound);
    CHECK(manager.Fork(alices).error().code == ErrorCode::kSessionNotFound);
    CHECK(manager.List().empty());
  }
  CHECK(backend->started().size() == sandboxes);  // nothing was resumed for bob
  {
    ActingSubject alice("token:alice");
    auto listed = manager.List();
    REQUIRE(listed.size() == 1);
    CHECK(listed[0].state == "hibernated");
    request.code = "print(x + 1)";
    auto resumed = manager.Run(alices, request);
    REQUIRE(resumed);
    CHECK(resumed->resumed);
    CHECK(resumed->stdout_text == "42\n");
  }
}
}  // namespace sandbox::session_owner_test
