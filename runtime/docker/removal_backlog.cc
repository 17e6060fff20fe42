#include "runtime/docker/removal_backlog.h"

#include <vector>

#include <spdlog/spdlog.h>

namespace sandbox::docker {

void RemovalBacklog::Add(const std::string& container_id) {
  std::lock_guard<std::mutex> lock(mutex_);
  ids_.insert(container_id);
}

int RemovalBacklog::Retry(const EngineClient& engine) {
  std::vector<std::string> pending;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    pending.assign(ids_.begin(), ids_.end());
  }
  int removed = 0;
  for (const std::string& id : pending) {
    // RemoveContainer treats "no such container" as done: someone else removed it.
    if (auto done = engine.RemoveContainer(id); !done) {
      spdlog::debug("container {} still not removed: {}", id.substr(0, 12), done.error().message);
      continue;
    }
    spdlog::info("removed container {} (its earlier removal had failed)", id.substr(0, 12));
    std::lock_guard<std::mutex> lock(mutex_);
    ids_.erase(id);
    ++removed;
  }
  return removed;
}

size_t RemovalBacklog::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return ids_.size();
}

}  // namespace sandbox::docker
