// One client's resources/subscribe state: the URIs it watches and the version of each as last
// seen, so that after work that may have changed files (a tool call) the changed ones can be
// named in notifications/resources/updated. Thread-safe.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "mcp/resources.h"
#include "runtime/base/result.h"

namespace sandbox::mcp {

class ResourceSubscriptions {
 public:
  // Subscriptions per client: each costs a look at the resource after every tool call.
  static constexpr size_t kMaxSubscriptions = 100;

  explicit ResourceSubscriptions(std::shared_ptr<ResourceProvider> provider)
      : provider_(std::move(provider)) {}

  // Watches `uri` from its current version on (a file that does not exist yet may be
  // watched: its creation is a change). Errors as for ResourceProvider::Version, or
  // kInvalidArgument past kMaxSubscriptions. Subscribing twice is one subscription.
  Status Subscribe(const std::string& uri);
  // Unwatching what is not watched is not an error.
  void Unsubscribe(const std::string& uri);
  // The watched URIs whose version differs from the one last seen (which is updated). A
  // resource that cannot be looked at now (a busy session) keeps its old version and is
  // judged next time.
  std::vector<std::string> Changed();
  bool empty() const;

 private:
  std::shared_ptr<ResourceProvider> provider_;
  mutable std::mutex mutex_;
  std::map<std::string, std::string> versions_;  // uri -> version last seen
};

}  // namespace sandbox::mcp
