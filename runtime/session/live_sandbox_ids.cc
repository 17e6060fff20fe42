// LiveSandboxIds (live_sandbox_ids.h): the ids of the sessions with a live sandbox, and the
// sandbox that holds its id's claim until it is killed or gone.
#include "runtime/session/live_sandbox_ids.h"

#include <mutex>
#include <set>
#include <utility>

namespace sandbox {

struct LiveSandboxIds::Claim::Ids {
  std::mutex mutex;
  std::set<std::string> live;  // guarded by mutex
};

namespace {

// A sandbox that gives its session's id back when it is killed or destroyed; everything else is
// the backend's sandbox's.
class ClaimedSandbox : public Sandbox {
 public:
  ClaimedSandbox(LiveSandboxIds::Claim claim, std::unique_ptr<Sandbox> sandbox)
      : claim_(std::move(claim)), sandbox_(std::move(sandbox)) {}
  ByteStream& stream() override { return sandbox_->stream(); }
  Status Kill() override {
    Status killed = sandbox_->Kill();
    if (killed) claim_.Release();  // a sandbox that may still run keeps its id until it is gone
    return killed;
  }
  SandboxUsage Usage() override { return sandbox_->Usage(); }
  std::function<std::optional<uint64_t>()> StartMemoryPeakWindow() override {
    return sandbox_->StartMemoryPeakWindow();
  }
  uint64_t OomKills() override { return sandbox_->OomKills(); }
  double CpuSeconds() override { return sandbox_->CpuSeconds(); }
  Status SetCpuPriority(CpuPriority priority) override {
    return sandbox_->SetCpuPriority(priority);
  }
  const EnforcedLimits& enforced_limits() const override { return sandbox_->enforced_limits(); }
  std::string backend_name() const override { return sandbox_->backend_name(); }

 private:
  // Declared first, so destroyed last: the id is free once the sandbox's destructor is done.
  LiveSandboxIds::Claim claim_;
  std::unique_ptr<Sandbox> sandbox_;
};

}  // namespace

LiveSandboxIds::LiveSandboxIds() : ids_(std::make_shared<Claim::Ids>()) {}

LiveSandboxIds::Claim::Claim(std::shared_ptr<Ids> ids, std::string id)
    : ids_(std::move(ids)), id_(std::move(id)) {}

LiveSandboxIds::Claim::Claim(Claim&& other) noexcept
    : ids_(std::move(other.ids_)), id_(std::move(other.id_)) {}

LiveSandboxIds::Claim::~Claim() { Release(); }

void LiveSandboxIds::Claim::Release() {
  if (!ids_) return;
  {
    std::lock_guard<std::mutex> lock(ids_->mutex);
    ids_->live.erase(id_);
  }
  ids_.reset();
}

Result<LiveSandboxIds::Claim> LiveSandboxIds::Take(const std::string& id) const {
  std::lock_guard<std::mutex> lock(ids_->mutex);
  if (!ids_->live.insert(id).second) {
    return Fail(ErrorCode::kSandboxUnavailable,
                "session {} already has a live sandbox; a session runs in one sandbox at a time",
                id);
  }
  return Claim(ids_, id);
}

std::unique_ptr<Sandbox> LiveSandboxIds::Hold(Claim claim, std::unique_ptr<Sandbox> sandbox) {
  return std::make_unique<ClaimedSandbox>(std::move(claim), std::move(sandbox));
}

bool LiveSandboxIds::live(const std::string& id) const {
  std::lock_guard<std::mutex> lock(ids_->mutex);
  return ids_->live.count(id) > 0;
}

}  // namespace sandbox
