// GET /files/{session_id}/{path}?token=...: what may be downloaded from a session and how it is
// answered. A link names a file under /mnt/data and carries a per-session token (an HMAC of the
// session id under a key made at start, so links die with the server); the answer never lets a
// browser run or sniff what sandboxed code wrote. Socket-free: the HTTP transport routes here.
#pragma once

#include <string>
#include <string_view>

#include "mcp/http_admission.h"
#include "mcp/http_options.h"

namespace sandbox::mcp {

class FileDownloads {
 public:
  // No `read_file`: nothing is downloadable (links are "", requests get 404). `replica`: this
  // server's SANDBOX_REPLICA_ID; a link of another replica's session is 404.
  FileDownloads(std::string token_key, FileReader read_file, std::string replica = "")
      : token_key_(std::move(token_key)),
        read_file_(std::move(read_file)),
        replica_(std::move(replica)) {}

  // The download URL of `path` (absolute, inside the session's sandbox) under `base_url`
  // ("http://host:port"), or "" when it is not downloadable (not below /mnt/data).
  std::string Link(const std::string& base_url, const std::string& session_id,
                   const std::string& path) const;
  // The whole answer to a GET of `target` ("/files/...?token=...").
  HttpResponse Serve(std::string_view target) const;
  // The token of a session's links.
  std::string Token(const std::string& session_id) const;

 private:
  std::string token_key_;
  FileReader read_file_;
  std::string replica_;
};

}  // namespace sandbox::mcp
