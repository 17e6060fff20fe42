// Containers whose removal failed (the daemon was down or restarting when their session
// closed). A daemon that stops kills its containers but keeps them, so without a retry they
// would stay until this server exits and a later sweep judges its owner gone. DockerBackend
// retries them before each start and when it is destroyed.
#pragma once

#include <mutex>
#include <set>
#include <string>

#include "runtime/docker/engine_client.h"

namespace sandbox::docker {

class RemovalBacklog {
 public:
  void Add(const std::string& container_id);
  // DELETE ?force=1 of each; the ones the daemon still refuses stay for the next retry.
  // Returns how many were removed.
  int Retry(const EngineClient& engine);
  size_t size() const;

 private:
  mutable std::mutex mutex_;
  std::set<std::string> ids_;
};

}  // namespace sandbox::docker
