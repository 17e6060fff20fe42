#include "mcp/file_downloads.h"

#include <time.h>

#include <charconv>

#include <fmt/format.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <spdlog/spdlog.h>

#include "mcp/jsonrpc.h"
#include "mcp/tool_result.h"
#include "runtime/base/quoted.h"
#include "runtime/base/utf8.h"
#include "runtime/sandbox_layout.h"
#include "runtime/session/session_id.h"

namespace sandbox::mcp {

namespace {

// A path below /mnt/data as a link names it: segments, none empty, "." or "..", and no NUL, so
// each file has one spelling and none climbs out (the agent confines paths too).
bool IsCanonicalRelativePath(std::string_view relative) {
  if (relative.empty()) return false;
  size_t start = 0;
  while (true) {
    size_t next = relative.find('/', start);
    std::string_view part = relative.substr(
        start, next == std::string_view::npos ? std::string_view::npos : next - start);
    if (part.empty() || part == "." || part == ".." || part.find('\0') != std::string_view::npos) {
      return false;
    }
    if (next == std::string_view::npos) return true;
    start = next + 1;
  }
}

int64_t UnixSeconds(std::chrono::system_clock::time_point time) {
  return std::chrono::duration_cast<std::chrono::seconds>(time.time_since_epoch()).count();
}

// "2026-11-28T21:00:00Z".
std::string Iso8601(int64_t unix_seconds) {
  time_t time = static_cast<time_t>(unix_seconds);
  struct tm utc {};
  char text[32] = "";
  if (gmtime_r(&time, &utc) == nullptr || strftime(text, sizeof text, "%FT%TZ", &utc) == 0) {
    return std::to_string(unix_seconds);
  }
  return text;
}

// "1 h", "90 min", "45 s": the TTL as a person reads it.
std::string HumanDuration(std::chrono::seconds duration) {
  int64_t seconds = duration.count();
  if (seconds % 3600 == 0) return fmt::format("{} h", seconds / 3600);
  if (seconds % 60 == 0) return fmt::format("{} min", seconds / 60);
  return fmt::format("{} s", seconds);
}

// RFC 8187 attr-char: what `filename*` carries unencoded.
bool IsAttrChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
         std::string_view("!#$&+-.^_`|~").find(c) != std::string_view::npos;
}

}  // namespace

std::string ContentDisposition(std::string_view disposition, std::string_view filename) {
  std::string ascii;
  for (char c : filename) {
    auto byte = static_cast<unsigned char>(c);
    // '%' too: some browsers percent-decode `filename` (RFC 6266 appendix D).
    bool plain = byte >= 0x20 && byte < 0x7F && c != '"' && c != '\\' && c != '%';
    ascii += plain ? c : '_';
  }
  std::string value = fmt::format("{}; filename=\"{}\"", disposition, ascii);
  if (ascii != filename) {
    value += "; filename*=UTF-8''";
    for (char c : ValidUtf8(filename)) {
      if (IsAttrChar(c)) {
        value += c;
      } else {
        value += fmt::format("%{:02X}", static_cast<unsigned char>(c));
      }
    }
  }
  return value;
}

std::string FileDownloads::Link(const std::string& base_url, const std::string& session_id,
                                const std::string& path) const {
  const std::string data_prefix = std::string(layout::kDataDir) + "/";
  if (!read_file_ || path.rfind(data_prefix, 0) != 0) return "";
  std::string relative = path.substr(data_prefix.size());
  if (!IsCanonicalRelativePath(relative)) return "";
  int64_t expires = UnixSeconds(now_() + ttl_);
  return fmt::format("{}/files/{}/{}?expires={}&token={}", base_url, session_id,
                     PercentEncodePath(relative), expires, Token(session_id, relative, expires));
}

std::string FileDownloads::Token(const std::string& session_id, const std::string& relative,
                                 int64_t expires) const {
  // What the token vouches for, each part length-prefixed so no two (session, path, expiry)
  // read alike, after a label no other use of the key shares.
  std::string message =
      fmt::format("mcp-sandbox download link v1\n{}:{}\n{}:{}\n{}", session_id.size(), session_id,
                  relative.size(), relative, expires);
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int mac_len = 0;
  HMAC(EVP_sha256(), token_key_.data(), static_cast<int>(token_key_.size()),
       reinterpret_cast<const unsigned char*>(message.data()), message.size(), mac, &mac_len);
  // 128 bits: as hard to guess as a session id.
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
  if (!IsCanonicalRelativePath(relative)) return text(400, "invalid path\n");
  // The token is checked before the expiry, so an expiry moved by hand is refused as a forgery,
  // and only a link we made is ever called expired.
  std::string token = QueryParam(query, "token");
  std::string expires_text = QueryParam(query, "expires");
  int64_t expires = 0;
  auto [end, error] =
      std::from_chars(expires_text.data(), expires_text.data() + expires_text.size(), expires);
  if (token.empty() || expires_text.empty() || error != std::errc() ||
      end != expires_text.data() + expires_text.size() ||
      !SecretEquals(token, Token(session_id, relative, expires))) {
    return text(403,
                "this link is not valid for this file (use the download_url of a tool result, "
                "unchanged)\n");
  }
  if (UnixSeconds(now_()) > expires) {
    return text(403, fmt::format("this download link expired at {} (links last {}); call the tool "
                                 "again (sandbox_read_artifact or sandbox_list_artifacts) for a "
                                 "new download_url\n",
                                 Iso8601(expires), HumanDuration(ttl_)));
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
        spdlog::warn("download {} of {}: {}", Quoted(relative, 200), Quoted(session_id),
                     Quoted(file.error().message, 300));
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
  bool inline_ok = mime.rfind("image/", 0) == 0 && mime != "image/svg+xml";
  inline_ok = inline_ok || mime == "text/plain" || mime == "text/csv" ||
              mime == "application/json" || mime == "application/pdf";
  response.headers.push_back(
      {"Content-Disposition", ContentDisposition(inline_ok ? "inline" : "attachment", name)});
  response.content_type = mime;
  response.body = std::move(file->content);
  return response;
}

}  // namespace sandbox::mcp
