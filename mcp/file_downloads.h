// GET /files/{session_id}/{path}?expires={unix s}&token={hmac}: what may be downloaded from a
// session and how it is answered. A link is a presigned URL for one file, as S3's are: its token
// is an HMAC, under a key made at start (so links die with the server), of the session id, the
// file's path below /mnt/data and the expiry, so it opens that one file, read-only, until then.
// The answer never lets a browser run or sniff what sandboxed code wrote. Socket-free: the HTTP
// transport routes here.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "mcp/http_admission.h"
#include "mcp/http_options.h"

namespace sandbox::mcp {

class FileDownloads {
 public:
  using Clock = std::function<std::chrono::system_clock::time_point()>;

  // No `read_file`: nothing is downloadable (links are "", requests get 404). `replica`: this
  // server's SANDBOX_REPLICA_ID; a link of another replica's session is 404. `ttl`: how long a
  // link opens its file (SANDBOX_DOWNLOAD_TTL). `now`: the clock links are minted and judged by.
  FileDownloads(std::string token_key, FileReader read_file, std::string replica = "",
                std::chrono::seconds ttl = kDownloadLinkTtl,
                Clock now = std::chrono::system_clock::now)
      : token_key_(std::move(token_key)),
        read_file_(std::move(read_file)),
        replica_(std::move(replica)),
        ttl_(ttl),
        now_(std::move(now)) {}

  // The download URL of `path` (absolute, inside the session's sandbox) under `base_url`
  // ("http://host:port"), valid for the TTL from now; "" when it is not downloadable (not a
  // file path below /mnt/data without empty, "." or ".." segments).
  std::string Link(const std::string& base_url, const std::string& session_id,
                   const std::string& path) const;
  // The whole answer to a GET of `target` ("/files/...?expires=...&token=...").
  HttpResponse Serve(std::string_view target) const;

 private:
  // The token of a link: `relative` is the file's path below /mnt/data, `expires` unix seconds.
  std::string Token(const std::string& session_id, const std::string& relative,
                    int64_t expires) const;

  std::string token_key_;
  FileReader read_file_;
  std::string replica_;
  std::chrono::seconds ttl_;
  Clock now_;
};

// The Content-Disposition value for a file called `filename` (RFC 6266): `disposition`
// ("inline" or "attachment"), a quoted ASCII `filename` with every byte that could break or
// smuggle into the header (controls, quotes, backslashes, '%', non-ASCII) replaced by '_', and,
// when that changed the name, the exact name as UTF-8 in `filename*` (RFC 8187).
std::string ContentDisposition(std::string_view disposition, std::string_view filename);

}  // namespace sandbox::mcp
