#include "tools/cli/live_sandboxes.h"

#include "runtime/agent/init/disk_use.h"
#include "runtime/ns/process_usage.h"
#include "runtime/sandbox_layout.h"
#include "runtime/session/egress_bytes_file.h"

namespace sandbox::cli {

std::vector<LiveSandbox> ReadLiveSandboxes(const std::string& state_dir) {
  ns::SessionRecords records(state_dir + "/sessions");
  const std::string bytes_dir = EgressBytesDir(state_dir);
  std::vector<LiveSandbox> sandboxes;
  for (auto& record : records.ReadAll()) {
    LiveSandbox sandbox;
    sandbox.alive = record.init.IsAlive();
    sandbox.server_alive = record.server.IsAlive();
    if (sandbox.alive) {
      std::string root = "/proc/" + std::to_string(record.init.pid) + "/root";
      sandbox.process = ns::ProcessTreeUsage(record.init.pid);
      sandbox.data_bytes = agent::TmpfsUsedBytes(root + layout::kDataDir);
      sandbox.tmp_bytes = agent::TmpfsUsedBytes(root + layout::kTmpDir);
      sandbox.egress_bytes = ReadEgressBytes(bytes_dir, record.session_id);
    }
    sandbox.record = std::move(record);
    sandboxes.push_back(std::move(sandbox));
  }
  return sandboxes;
}

}  // namespace sandbox::cli
