#include "mcp/apps/session_json.h"

#include <fmt/format.h>

#include "runtime/base/quoted.h"
#include "runtime/base/units.h"

namespace sandbox::mcp::apps {

namespace {

constexpr std::string_view kMarker = "\x1e_mcp_view_result ";

// Calls __mcp_view_result() and sends its object back: on stdout after the marker when it fits
// in `inline_limit` bytes, else through a file of its own in /tmp whose path comes on stdout
// instead (named per call, so two calls in a row cannot take each other's; those older than a
// minute are removed); an object over `max_bytes` is not sent, only its size. Ends in a
// statement, so `_` stays as it was.
std::string EmitCode(uint64_t inline_limit, uint64_t max_bytes) {
  return fmt::format(
      "def __mcp_view_emit(marker, inline_limit, max_bytes):\n"
      "    import glob, json, os, sys, time\n"
      "    for old in glob.glob('/tmp/.mcp_view_result-*.json'):\n"
      "        try:\n"
      "            if os.stat(old).st_mtime < time.time() - 60:\n"
      "                os.remove(old)\n"
      "        except OSError:\n"
      "            pass\n"
      "    path = '/tmp/.mcp_view_result-%d.json' % time.time_ns()\n"
      "    try:\n"
      "        text = json.dumps(__mcp_view_result(), allow_nan=False)\n"
      "    except Exception as error:\n"
      "        text = json.dumps({{'error': '%s: %s' % (type(error).__name__, error)}})\n"
      "    if len(text) > max_bytes:\n"
      "        text = json.dumps({{'too_large': len(text)}})\n"
      "    elif len(marker) + len(text) + 1 > inline_limit:\n"
      "        with open(path, 'w', encoding='ascii') as file:\n"
      "            file.write(text)\n"
      "        text = json.dumps({{'file': path}})\n"
      "    sys.stdout.write(marker + text + '\\n')\n"
      "try:\n"
      "    __mcp_view_emit({0}, {1}, {2})\n"
      "finally:\n"
      "    del __mcp_view_emit, __mcp_view_result\n",
      Json(std::string(kMarker)).dump(), inline_limit, max_bytes);
}

Result<Json> ParseObject(std::string_view text, std::string_view what) {
  Json object = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!object.is_object()) {
    return Fail(
        MakeError(ErrorCode::kInternal, "the session returned a {} that is not JSON", what));
  }
  return object;
}

}  // namespace

Result<Json> RunForView(SessionManager& sessions, const ToolSettings& settings,
                        SessionJsonRequest request) {
  RunRequest run_request;
  run_request.kind = RunRequest::Kind::kPython;
  // json.dumps writes ASCII only, so its length in characters is its size in bytes.
  run_request.code = request.code + EmitCode(settings.max_output_bytes, settings.max_result_bytes);
  run_request.timeout_s = settings.exec_timeout_s;
  run_request.max_output_bytes = settings.max_output_bytes;
  auto run = sessions.Run(request.session_id, std::move(run_request), nullptr, nullptr);
  if (!run) return Fail(run.error());
  const std::string& out = run->stdout_text;
  size_t at = out.rfind(kMarker);
  if (at == std::string::npos || run->exit_code != 0) {
    return Fail(
        MakeError(ErrorCode::kInternal, "the session did not return a {} (exit code {}){}",
                  request.what, run->exit_code,
                  run->stderr_text.empty() ? std::string() : ": " + Quoted(run->stderr_text, 400)));
  }
  size_t start = at + kMarker.size();
  size_t end = out.find('\n', start);
  SBX_ASSIGN_OR_RETURN(
      Json object,
      ParseObject(std::string_view(out).substr(
                      start, end == std::string::npos ? std::string::npos : end - start),
                  request.what));
  if (auto file = object.find("file"); file != object.end() && file->is_string()) {
    SBX_ASSIGN_OR_RETURN(
        std::string text,
        sessions.ReadFile(request.session_id, file->get<std::string>(), settings.max_result_bytes));
    SBX_ASSIGN_OR_RETURN(object, ParseObject(text, request.what));
  }
  if (auto size = object.find("too_large"); size != object.end()) {
    return Fail(MakeError(ErrorCode::kArtifactTooLarge,
                          "the {} ({}) is larger than a result may be ({}){}{}", request.what,
                          FormatBytes(size->is_number_unsigned() ? size->get<uint64_t>() : 0),
                          FormatBytes(settings.max_result_bytes),
                          request.too_large_hint.empty() ? "" : "; ", request.too_large_hint));
  }
  if (auto error = object.find("error"); error != object.end()) {
    return Fail(MakeError(ErrorCode::kInvalidArgument, "{}",
                          error->is_string() ? error->get<std::string>() : error->dump()));
  }
  return object;
}

}  // namespace sandbox::mcp::apps
