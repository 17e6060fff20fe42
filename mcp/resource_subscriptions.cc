#include "mcp/resource_subscriptions.h"

namespace sandbox::mcp {

Status ResourceSubscriptions::Subscribe(const std::string& uri) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (versions_.count(uri) == 0 && versions_.size() >= kMaxSubscriptions) {
      return Fail(ErrorCode::kInvalidArgument,
                  "at most {} resources can be subscribed at once; unsubscribe some first",
                  kMaxSubscriptions);
    }
  }
  // Looked at outside the lock: it may take a round trip to a sandbox.
  SBX_ASSIGN_OR_RETURN(std::string version, provider_->Version(uri));
  std::lock_guard<std::mutex> lock(mutex_);
  versions_[uri] = std::move(version);
  return {};
}

void ResourceSubscriptions::Unsubscribe(const std::string& uri) {
  std::lock_guard<std::mutex> lock(mutex_);
  versions_.erase(uri);
}

std::vector<std::string> ResourceSubscriptions::Changed() {
  std::map<std::string, std::string> seen;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    seen = versions_;
  }
  std::vector<std::string> changed;
  for (const auto& [uri, old_version] : seen) {
    auto now = provider_->Version(uri);
    // A session that closed since: its files are gone, which is a change once.
    std::string version;
    if (now) {
      version = std::move(*now);
    } else if (now.error().code != ErrorCode::kSessionNotFound) {
      continue;  // unknown now (busy): judged next time
    }
    if (version == old_version) continue;
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = versions_.find(uri);
    if (it == versions_.end() || it->second != old_version) continue;  // raced an (un)subscribe
    it->second = version;
    changed.push_back(uri);
  }
  return changed;
}

bool ResourceSubscriptions::empty() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return versions_.empty();
}

}  // namespace sandbox::mcp
