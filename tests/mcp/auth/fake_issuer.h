// An OAuth issuer on 127.0.0.1 (a real HTTP server, cpp-httplib) for tests: serves OpenID
// discovery (not RFC 8414, as many IdPs) and a key set the test can change.
#pragma once

#include <httplib.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/mcp/auth/test_keys.h"

namespace sandbox::mcp::auth::testing {

// Serves from construction until destruction.
class FakeIssuer {
 public:
  FakeIssuer() {
    port_ = server_.bind_to_any_port("127.0.0.1");
    issuer_ = "http://127.0.0.1:" + std::to_string(port_);
    server_.Get("/.well-known/openid-configuration", [this](const auto&, auto& res) {
      res.set_content(
          nlohmann::json({{"issuer", metadata_issuer_.empty() ? issuer_ : metadata_issuer_},
                          {"jwks_uri", issuer_ + "/jwks"}})
              .dump(),
          "application/json");
    });
    server_.Get("/jwks", [this](const auto&, auto& res) {
      ++jwks_fetches_;
      std::lock_guard<std::mutex> lock(mutex_);
      res.set_content(jwks_.dump() + padding_, "application/json");
    });
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    while (!server_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ~FakeIssuer() {
    server_.stop();
    thread_.join();
  }
  void Publish(std::vector<const TestKey*> keys) {
    std::lock_guard<std::mutex> lock(mutex_);
    jwks_ = {{"keys", nlohmann::json::array()}};
    for (const TestKey* key : keys) jwks_["keys"].push_back(key->PublicJwk());
  }
  void Pad(size_t bytes) {
    std::lock_guard<std::mutex> lock(mutex_);
    padding_ = std::string(bytes, ' ');
  }
  const std::string& issuer() const { return issuer_; }
  std::string metadata_issuer_;
  std::atomic<int> jwks_fetches_{0};

 private:
  httplib::Server server_;
  std::thread thread_;
  int port_ = 0;
  std::string issuer_;
  std::mutex mutex_;
  nlohmann::json jwks_ = {{"keys", nlohmann::json::array()}};
  std::string padding_;
};

}  // namespace sandbox::mcp::auth::testing
