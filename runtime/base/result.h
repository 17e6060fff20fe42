// Errors as values: Result<T> is tl::expected<T, Error>. An Error carries a stable code (mapped
// to the MCP error codes of DESIGN.md at the edge), a human message with context added going up,
// and the errno captured at the failing call when there was one.
#pragma once

#include <cerrno>
#include <cstring>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <tl/expected.hpp>

namespace sandbox {

// Stable, machine-readable error codes. Their string forms are part of the MCP contract.
enum class ErrorCode {
  kInternal,
  kInvalidArgument,
  kInvalidSessionId,
  kSessionNotFound,
  kSessionBusy,
  kMaxSessions,
  kCodeTooLarge,
  kUploadTooLarge,
  kInvalidPath,
  kInvalidFilename,
  kFileExists,
  kNotFound,
  kArtifactTooLarge,
  kTimeout,
  kOom,
  kCancelled,
  kSandboxUnavailable,
  kInstallFailed,
  kServerDraining,
};

// The DESIGN.md spelling of a code ("session_busy", ...).
std::string_view ErrorCodeName(ErrorCode code);

struct Error {
  ErrorCode code = ErrorCode::kInternal;
  std::string message;
  int sys_errno = 0;  // errno at the failing call; 0 when the failure was not a system call
  // Machine-readable details beyond the code, for a client to act on (a tool error's
  // structuredContent carries them): {"reason", "replica_unavailable"}, {"replica", "r1"}.
  std::vector<std::pair<std::string, std::string>> details;

  // Prefixes context: Error{"open(x): ENOENT"}.Context("load image") -> "load image: open(x):
  // ENOENT".
  Error Context(std::string_view what) && {
    message = fmt::format("{}: {}", what, message);
    return std::move(*this);
  }
  Error Context(std::string_view what) const& {
    Error copy = *this;
    return std::move(copy).Context(what);
  }
};

template <typename T>
using Result = tl::expected<T, Error>;
using Status = tl::expected<void, Error>;

// The symbolic name of an errno value ("ENOENT"), falling back to the number.
std::string_view ErrnoName(int err);

// An Error from errno at the call site: SysError("mkdir", path) -> "mkdir(path): EACCES (...)".
Error SysError(std::string_view call, std::string_view arg = {}, int err = errno);

template <typename... Args>
Error MakeError(ErrorCode code, fmt::format_string<Args...> format, Args&&... args) {
  return Error{code, fmt::format(format, std::forward<Args>(args)...), 0, {}};
}

inline tl::unexpected<Error> Fail(Error error) { return tl::unexpected<Error>(std::move(error)); }

template <typename... Args>
tl::unexpected<Error> Fail(ErrorCode code, fmt::format_string<Args...> format, Args&&... args) {
  return tl::unexpected<Error>(MakeError(code, format, std::forward<Args>(args)...));
}

inline tl::unexpected<Error> FailSys(std::string_view call, std::string_view arg = {},
                                     int err = errno) {
  return tl::unexpected<Error>(SysError(call, arg, err));
}

// Propagates an error out of the enclosing function returning Result<...>/Status.
#define SBX_TRY(expr)                                                                \
  do {                                                                               \
    auto&& sbx_try_result_ = (expr);                                                 \
    if (!sbx_try_result_) return tl::unexpected(std::move(sbx_try_result_).error()); \
  } while (0)

// Assigns the value of a Result to `lhs`, or propagates its error.
#define SBX_ASSIGN_OR_RETURN(lhs, expr) \
  SBX_ASSIGN_OR_RETURN_IMPL(SBX_CONCAT(sbx_r_, __LINE__), lhs, expr)
#define SBX_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr)          \
  auto tmp = (expr);                                       \
  if (!tmp) return tl::unexpected(std::move(tmp).error()); \
  lhs = std::move(*tmp)
#define SBX_CONCAT(a, b) SBX_CONCAT_IMPL(a, b)
#define SBX_CONCAT_IMPL(a, b) a##b

}  // namespace sandbox
