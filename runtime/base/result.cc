#include "runtime/base/result.h"

namespace sandbox {

std::string_view ErrorCodeName(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInternal:
      return "internal";
    case ErrorCode::kInvalidArgument:
      return "invalid_argument";
    case ErrorCode::kInvalidSessionId:
      return "invalid_session_id";
    case ErrorCode::kSessionNotFound:
      return "session_not_found";
    case ErrorCode::kSessionBusy:
      return "session_busy";
    case ErrorCode::kMaxSessions:
      return "max_sessions";
    case ErrorCode::kCodeTooLarge:
      return "code_too_large";
    case ErrorCode::kUploadTooLarge:
      return "upload_too_large";
    case ErrorCode::kInvalidPath:
      return "invalid_path";
    case ErrorCode::kInvalidFilename:
      return "invalid_filename";
    case ErrorCode::kFileExists:
      return "file_exists";
    case ErrorCode::kNotFound:
      return "not_found";
    case ErrorCode::kArtifactTooLarge:
      return "artifact_too_large";
    case ErrorCode::kTimeout:
      return "timeout";
    case ErrorCode::kOom:
      return "oom";
    case ErrorCode::kCancelled:
      return "cancelled";
    case ErrorCode::kSandboxUnavailable:
      return "sandbox_unavailable";
    case ErrorCode::kInstallFailed:
      return "install_failed";
    case ErrorCode::kServerDraining:
      return "server_draining";
  }
  return "internal";
}

std::string_view ErrnoName(int err) {
  // strerrorname_np is glibc >= 2.32 (bookworm has 2.36).
  const char* name = strerrorname_np(err);
  return name != nullptr ? std::string_view(name) : std::string_view("E?");
}

Error SysError(std::string_view call, std::string_view arg, int err) {
  Error error;
  error.code = err == ENOENT ? ErrorCode::kNotFound : ErrorCode::kInternal;
  error.sys_errno = err;
  if (arg.empty()) {
    error.message = fmt::format("{}: {} ({})", call, ErrnoName(err), strerror(err));
  } else {
    error.message = fmt::format("{}({}): {} ({})", call, arg, ErrnoName(err), strerror(err));
  }
  return error;
}

}  // namespace sandbox
