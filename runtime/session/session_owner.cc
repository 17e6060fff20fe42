#include "runtime/session/session_owner.h"

#include "runtime/base/units.h"

namespace sandbox {

namespace {
thread_local const std::string* current_subject = nullptr;
}  // namespace

ActingSubject::ActingSubject(std::string subject)
    : subject_(std::move(subject)), outer_(current_subject) {
  current_subject = &subject_;
}

ActingSubject::~ActingSubject() { current_subject = outer_; }

const std::string* ActingSubject::Current() { return current_subject; }

bool ActingSubject::MaySee(const std::string& owner) {
  return current_subject == nullptr || *current_subject == owner;
}

Status FitToQuota(const SubjectQuota& quota, const Limits& defaults,
                  std::optional<uint64_t>& memory_bytes, std::optional<double>& cpus) {
  if (quota.max_memory_bytes > 0) {
    if (memory_bytes && *memory_bytes > quota.max_memory_bytes) {
      return Fail(ErrorCode::kInvalidArgument,
                  "memory limit {} is above your quota of {} per session "
                  "(SANDBOX_SUBJECT_MAX_MEMORY)",
                  FormatBytes(*memory_bytes), FormatBytes(quota.max_memory_bytes));
    }
    if (!memory_bytes && defaults.memory_bytes > quota.max_memory_bytes) {
      memory_bytes = quota.max_memory_bytes;
    }
  }
  if (quota.max_cpus > 0) {
    if (cpus && *cpus > quota.max_cpus) {
      return Fail(ErrorCode::kInvalidArgument,
                  "cpu limit {} is above your quota of {} per session (SANDBOX_SUBJECT_MAX_CPUS)",
                  *cpus, quota.max_cpus);
    }
    if (!cpus && defaults.cpus > quota.max_cpus) cpus = quota.max_cpus;
  }
  return {};
}

}  // namespace sandbox
