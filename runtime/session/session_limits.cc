#include "runtime/session/session_limits.h"

#include <algorithm>

#include "runtime/session/quota_claim.h"

namespace sandbox {

Result<Limits> EffectiveLimits(const Limits& configured, const SessionOptions& options) {
  Limits limits = configured;
  const Limits& max = configured;
  if (options.memory_bytes) {
    if (*options.memory_bytes == 0 || *options.memory_bytes > max.memory_bytes) {
      return Fail(ErrorCode::kInvalidArgument,
                  "memory limit must be between 1 byte and the configured maximum of {} bytes",
                  max.memory_bytes);
    }
    limits.memory_bytes = *options.memory_bytes;
  }
  if (options.cpus) {
    if (!(*options.cpus > 0) || *options.cpus > max.cpus) {
      return Fail(ErrorCode::kInvalidArgument,
                  "cpu limit must be above 0 and at most the configured maximum of {}", max.cpus);
    }
    limits.cpus = *options.cpus;
  }
  if (options.pids) {
    if (*options.pids < 8 || *options.pids > max.pids) {
      return Fail(ErrorCode::kInvalidArgument,
                  "pids limit must be between 8 and the configured maximum of {}", max.pids);
    }
    limits.pids = *options.pids;
  }
  // /mnt/data and /tmp are tmpfs charged to the session's memory (runtime/limits.h): sized
  // from the session's memory limit, so a smaller memory request shrinks them with it.
  limits.tmp_bytes = std::min(max.tmp_bytes, TmpBytesFor(limits.memory_bytes));
  const uint64_t max_disk = std::min(max.disk_bytes, MaxDataBytes(limits.memory_bytes));
  if (options.disk_bytes) {
    if (*options.disk_bytes == 0 || *options.disk_bytes > max_disk) {
      return Fail(ErrorCode::kInvalidArgument,
                  "disk limit must be between 1 byte and {} bytes (the configured maximum, and "
                  "at most half the session's memory limit: /mnt/data is a tmpfs whose pages "
                  "count as the session's memory)",
                  max_disk);
    }
    limits.disk_bytes = *options.disk_bytes;
  } else {
    limits.disk_bytes = std::min(limits.disk_bytes, max_disk);
  }
  return limits;
}

SubjectQuota SubjectQuotaOf(const SessionConfig& config, const std::string& owner) {
  auto claim = owner.empty() ? std::nullopt : RememberedQuotaClaim(owner);
  return claim ? ApplyQuotaClaim(config.subject_quota, *claim, config.limits, config.max_sessions)
               : config.subject_quota;
}

}  // namespace sandbox
