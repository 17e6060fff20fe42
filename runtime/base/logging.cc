#include "runtime/base/logging.h"

#include <memory>

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "runtime/base/log_fields.h"

namespace sandbox {

namespace {

// %* in the JSON pattern: the thread's structured fields and the message, as JSON members
// (log_fields.h). The message is escaped here: spdlog's %v would copy a quote or a line feed
// into the line as it is, and the line would no longer parse.
class JsonMembersFlag : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& msg, const std::tm& /*time*/,
              spdlog::memory_buf_t& dest) override {
    std::string members;
    AppendJsonLogMembers(CurrentLogFields(),
                         std::string_view(msg.payload.data(), msg.payload.size()), members);
    dest.append(members.data(), members.data() + members.size());
  }
  std::unique_ptr<spdlog::custom_flag_formatter> clone() const override {
    return std::make_unique<JsonMembersFlag>();
  }
};

}  // namespace

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
    auto formatter = std::make_unique<spdlog::pattern_formatter>();
    formatter->add_flag<JsonMembersFlag>('*').set_pattern(
        R"({"time":"%Y-%m-%dT%H:%M:%S.%e%z","level":"%l","pid":%P,)" + replica + "%*}");
    logger->set_formatter(std::move(formatter));
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
