#include "mcp/file_downloads.h"

#include <fmt/format.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <spdlog/spdlog.h>

#include "mcp/jsonrpc.h"
#include "mcp/tool_result.h"
#include "runtime/sandbox_layout.h"
#include "runtime/session/session_id.h"

namespace sandbox::mcp {

std::string FileDownloads::Link(const std::string& base_url, const std::string& session_id,
                                const std::string& path) const {
  const std::string data_prefix = std::string(layout::kDataDir) + "/";
  if (!read_file_ || path.rfind(data_prefix, 0) != 0 || path.size() == data_prefix.size()) {
    return "";
  }
  return fmt::format("{}/files/{}/{}?token={}", base_url, session_id,
                     PercentEncodePath(path.substr(data_prefix.size())), Token(session_id));
}

std::string FileDownloads::Token(const std::string& session_id) const {
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int mac_len = 0;
  HMAC(EVP_sha256(), token_key_.data(), static_cast<int>(token_key_.size()),
       reinterpret_cast<const unsigned char*>(session_id.data()), session_id.size(), mac, &mac_len);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  for (unsigned int i = 0; i < 16 && i < mac_len; ++i) {
    hex += kHex[mac[i] >> 4];
    hex += kHex[mac[i] & 15];
  }
  return hex;
}

HttpResponse FileDownloads::Serve(std::string_view target) const {
  auto text = [](int status, std::string body) {
    HttpResponse response;
    response.status = status;
    response.content_type = "text/plain";
    response.body = std::move(body);
    return response;
  };
  auto not_found = [&] { return text(404, "not found\n"); };
  size_t question = target.find('?');
  std::string_view path = target.substr(0, question);
  std::string_view query =
      question == std::string_view::npos ? std::string_view() : target.substr(question + 1);
  // /files/{session_id}/{path}, both percent-decoded.
  path.remove_prefix(std::string_view("/files/").size());
  size_t slash = path.find('/');
  if (!read_file_ || slash == std::string_view::npos || slash == 0 || slash + 1 >= path.size()) {
    return not_found();
  }
  auto decoded_session = PercentDecode(path.substr(0, slash));
  auto decoded_relative = PercentDecode(path.substr(slash + 1));
  if (!decoded_session || !decoded_relative) return text(400, "invalid path\n");
  std::string session_id = *decoded_session;
  std::string relative = *decoded_relative;
  // Another replica's session (the proxy found that replica down and sent the link here): its
  // files are not here, and its token was made under that replica's key.
  if (auto parsed = ParseSessionId(session_id);
      parsed && !parsed->replica.empty() && parsed->replica != replica_) {
    return text(404, fmt::format("not found: the session lives on replica {}, which is not "
                                 "reachable\n",
                                 parsed->replica));
  }
  std::string token = QueryParam(query, "token");
  if (token.empty() || !SecretEquals(token, Token(session_id))) {
    return text(403, "a valid token is required (use the download_url of a tool result)\n");
  }
  // The agent confines paths to the sandbox; refuse traversal here too, so a URL can only
  // name a file below /mnt/data.
  size_t start = 0;
  while (start <= relative.size()) {
    size_t next = relative.find('/', start);
    std::string part =
        relative.substr(start, next == std::string::npos ? std::string::npos : next - start);
    if (part.empty() || part == "." || part == ".." || part.find('\0') != std::string::npos) {
      return text(400, "invalid path\n");
    }
    if (next == std::string::npos) break;
    start = next + 1;
  }
  auto file = read_file_(session_id, std::string(layout::kDataDir) + "/" + relative);
  if (!file) {
    switch (file.error().code) {
      case ErrorCode::kNotFound:
      case ErrorCode::kSessionNotFound:
      case ErrorCode::kInvalidSessionId:
        return not_found();
      case ErrorCode::kSessionBusy: {
        HttpResponse response =
            text(409, "the session is running a call; try again when it finished\n");
        response.headers.push_back({"Retry-After", "1"});
        return response;
      }
      case ErrorCode::kArtifactTooLarge:
        return text(413, ValidUtf8(file.error().message) + "\n");
      case ErrorCode::kInvalidPath:
        return text(400, "invalid path\n");
      default:
        spdlog::warn("download {} of {}: {}", LogSafe(relative, 200), LogSafe(session_id),
                     file.error().message);
        return text(500, "the file could not be read\n");
    }
  }
  HttpResponse response;
  std::string mime = file->mime_type.empty() ? "application/octet-stream" : file->mime_type;
  // Files come from sandboxed code: never let one run script in our origin (CSP sandbox gives
  // it an opaque origin), never let the browser guess a type, and download what is not an
  // image or plain data.
  response.headers.push_back({"Content-Security-Policy", "sandbox; default-src 'none'"});
  response.headers.push_back({"X-Content-Type-Options", "nosniff"});
  response.headers.push_back({"Cache-Control", "no-store"});
  std::string name = relative.substr(relative.rfind('/') + 1);
  std::string quoted;
  for (char c : name)
    quoted += (c == '"' || c == '\\' || static_cast<unsigned char>(c) < 0x20) ? '_' : c;
  bool inline_ok = mime.rfind("image/", 0) == 0 && mime != "image/svg+xml";
  inline_ok = inline_ok || mime == "text/plain" || mime == "text/csv" ||
              mime == "application/json" || mime == "application/pdf";
  response.headers.push_back(
      {"Content-Disposition",
       fmt::format("{}; filename=\"{}\"", inline_ok ? "inline" : "attachment", quoted)});
  response.content_type = mime;
  response.body = std::move(file->content);
  return response;
}

}  // namespace sandbox::mcp
