// The download policy without sockets: which paths get links, what a token proves, and how an
// answer keeps sandboxed files from running or being sniffed in a browser.
#include "mcp/file_downloads.h"

#include <string>

#include <catch2/catch.hpp>

namespace sandbox::mcp {
namespace {

const HttpField* Header(const HttpResponse& response, const std::string& name) {
  for (const auto& field : response.headers) {
    if (field.name == name) return &field;
  }
  return nullptr;
}

FileDownloads Downloads() {
  return FileDownloads("k3y", [](const std::string& session, const std::string& path) {
    if (session == "sess_busy00000000") {
      return Result<DownloadedFile>(Fail(ErrorCode::kSessionBusy, "busy"));
    }
    if (path == "/mnt/data/out/chart.png") return Result<DownloadedFile>({"PNG", "image/png"});
    if (path == "/mnt/data/page.html") {
      return Result<DownloadedFile>({"<script>", "text/html"});
    }
    return Result<DownloadedFile>(Fail(ErrorCode::kNotFound, "no such file"));
  });
}

TEST_CASE("downloads: links only for files below /mnt/data, with the session's token", "[unit]") {
  FileDownloads downloads = Downloads();
  std::string link = downloads.Link("http://h:1", "sess_a", "/mnt/data/out/chart.png");
  CHECK(link == "http://h:1/files/sess_a/out/chart.png?token=" + downloads.Token("sess_a"));
  CHECK(downloads.Link("http://h:1", "sess_a", "/tmp/x").empty());
  CHECK(downloads.Link("http://h:1", "sess_a", "/mnt/data/").empty());
  CHECK(downloads.Token("sess_a") != downloads.Token("sess_b"));
  CHECK(FileDownloads("other", nullptr).Token("sess_a") != downloads.Token("sess_a"));
  CHECK(FileDownloads("k", nullptr).Link("http://h:1", "sess_a", "/mnt/data/x").empty());
}

TEST_CASE("downloads: the token, the path and the session decide the answer", "[unit]") {
  FileDownloads downloads = Downloads();
  std::string token = downloads.Token("sess_a");
  CHECK(downloads.Serve("/files/sess_a/out/chart.png").status == 403);
  CHECK(downloads.Serve("/files/sess_a/out/chart.png?token=" + downloads.Token("sess_b")).status ==
        403);
  CHECK(downloads.Serve("/files/sess_a/../etc/passwd?token=" + token).status == 400);
  CHECK(downloads.Serve("/files/sess_a/out/%2e%2e/x?token=" + token).status == 400);
  CHECK(downloads.Serve("/files/sess_a/missing?token=" + token).status == 404);
  std::string busy_token = downloads.Token("sess_busy00000000");
  auto busy = downloads.Serve("/files/sess_busy00000000/a?token=" + busy_token);
  CHECK(busy.status == 409);
  CHECK(Header(busy, "Retry-After") != nullptr);

  auto png = downloads.Serve("/files/sess_a/out/chart.png?token=" + token);
  REQUIRE(png.status == 200);
  CHECK(png.body == "PNG");
  CHECK(png.content_type == "image/png");
  CHECK(Header(png, "Content-Disposition")->value == "inline; filename=\"chart.png\"");
  CHECK(Header(png, "X-Content-Type-Options")->value == "nosniff");
  CHECK(Header(png, "Content-Security-Policy")->value.find("sandbox") != std::string::npos);
  auto html = downloads.Serve("/files/sess_a/page.html?token=" + token);
  REQUIRE(html.status == 200);
  CHECK(Header(html, "Content-Disposition")->value.rfind("attachment", 0) == 0);
}

}  // namespace
}  // namespace sandbox::mcp
