// LiveSandboxIds: a session has one live sandbox at a time, the rule kept once above the
// backends. The starter claims a session's id before the backend starts its sandbox, and the
// sandbox it returns holds the claim until it is killed (saved, closed, retired) or destroyed;
// a second start of an id claimed is refused before the backend hears of it. Each backend still
// refuses a second sandbox of an id as the last guard (the namespace backend's live set, the
// Docker container's name, HostBackend's check), and clears a killed sandbox's leftovers
// itself: a killed sandbox is not live, so a resume right after a save may start while its
// removal is under way (docker_backend.cc removes such a container of its own).
//
// Thread-safe: one mutex over the ids, held only to look one up, add or remove it.
#pragma once

#include <memory>
#include <string>

#include "runtime/backend.h"
#include "runtime/base/result.h"

namespace sandbox {

class LiveSandboxIds {
 public:
  LiveSandboxIds();

  // A session's id, claimed until it is released or destroyed. Move-only.
  class Claim {
   public:
    Claim(Claim&& other) noexcept;
    Claim& operator=(Claim&&) = delete;
    Claim(const Claim&) = delete;
    ~Claim();
    // The id is free again (its sandbox was killed). Idempotent.
    void Release();

   private:
    friend class LiveSandboxIds;
    struct Ids;
    Claim(std::shared_ptr<Ids> ids, std::string id);
    std::shared_ptr<Ids> ids_;
    std::string id_;
  };

  // Claims `id`; kSandboxUnavailable when a live sandbox of it holds it.
  Result<Claim> Take(const std::string& id) const;
  // `sandbox`, holding `claim` until it is killed or destroyed (after it is gone: its
  // destructor removes what the backend made).
  static std::unique_ptr<Sandbox> Hold(Claim claim, std::unique_ptr<Sandbox> sandbox);
  // Whether a live sandbox holds `id`.
  bool live(const std::string& id) const;

 private:
  std::shared_ptr<Claim::Ids> ids_;  // shared with the claims: a sandbox may outlive the starter
};

}  // namespace sandbox
