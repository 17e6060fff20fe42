// The limits a new session runs with: the configured ones, with the session's own requests
// (SessionOptions) applied where they stay within them. /mnt/data and /tmp are tmpfs charged
// to the session's memory, so they are sized from its memory limit (runtime/limits.h).
#pragma once

#include <string>

#include "runtime/base/result.h"
#include "runtime/limits.h"
#include "runtime/session/session_config.h"

namespace sandbox {

// `configured`: the server's limits, which are both the defaults and the maxima. A request
// outside them is kInvalidArgument, with the bound in the message.
Result<Limits> EffectiveLimits(const Limits& configured, const SessionOptions& options);

// `owner`'s quota: the settings', with its token's quota claim applied (quota_claim.h); the
// settings' for the single user ("").
SubjectQuota SubjectQuotaOf(const SessionConfig& config, const std::string& owner);

}  // namespace sandbox
