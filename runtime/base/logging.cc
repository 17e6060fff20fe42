#include "runtime/base/logging.h"

#include <memory>

#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

namespace sandbox {

Status InitLogging(const LogOptions& options) {
  auto level = spdlog::level::from_str(options.level);
  // from_str maps unknown names to "off"; only "off" itself may mean off.
  if (level == spdlog::level::off && options.level != "off") {
    return Fail(ErrorCode::kInvalidArgument,
                "log level '{}' is not one of trace, debug, info, warn, error, critical, off",
                options.level);
  }
  if (options.format != "console" && options.format != "json") {
    return Fail(ErrorCode::kInvalidArgument, "log format '{}' is not console or json",
                options.format);
  }
  std::shared_ptr<spdlog::logger> logger;
  try {
    if (options.file.empty()) {
      logger = spdlog::stderr_color_mt("mcp-sandbox");
    } else {
      logger = spdlog::basic_logger_mt("mcp-sandbox", options.file);
    }
  } catch (const spdlog::spdlog_ex& ex) {
    spdlog::drop("mcp-sandbox");
    try {
      logger = options.file.empty() ? spdlog::stderr_color_mt("mcp-sandbox")
                                    : spdlog::basic_logger_mt("mcp-sandbox", options.file);
    } catch (const spdlog::spdlog_ex& again) {
      return Fail(ErrorCode::kInvalidArgument, "log file '{}': {}", options.file, again.what());
    }
  }
  for (char c : options.replica) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')) {
      return Fail(ErrorCode::kInvalidArgument, "replica id '{}' cannot go into a log line",
                  options.replica);
    }
  }
  if (options.format == "json") {
    std::string replica =
        options.replica.empty() ? "" : R"("replica":")" + options.replica + R"(",)";
    logger->set_pattern(R"({"time":"%Y-%m-%dT%H:%M:%S.%e%z","level":"%l","pid":%P,)" + replica +
                        R"("msg":"%v"})");
  } else {
    std::string replica = options.replica.empty() ? "" : "[" + options.replica + "] ";
    logger->set_pattern("%Y-%m-%d %H:%M:%S.%e %^%l%$ " + replica + "%v");
  }
  logger->set_level(level);
  logger->flush_on(spdlog::level::info);
  spdlog::set_default_logger(logger);
  return {};
}

}  // namespace sandbox
