// The download policy without sockets: which paths get links, what a link opens (one file, until
// it expires), and how an answer keeps sandboxed files from running or being sniffed in a
// browser. The clock is a variable here, so expiry is tested without waiting.
#include "mcp/file_downloads.h"

#include <chrono>
#include <memory>
#include <string>

#include <catch2/catch.hpp>

namespace sandbox::mcp::file_downloads_test {
namespace {

using std::chrono::seconds;
using std::chrono::system_clock;

const HttpField* Header(const HttpResponse& response, const std::string& name) {
  for (const auto& field : response.headers) {
    if (field.name == name) return &field;
  }
  return nullptr;
}

// A session's files as the agent would give them; the last path read is kept.
FileReader Files(std::shared_ptr<std::string> last_read = nullptr) {
  return [last_read](const std::string& session, const std::string& path) {
    if (last_read) *last_read = path;
    if (session == "sess_busy00000000") {
      return Result<DownloadedFile>(Fail(ErrorCode::kSessionBusy, "busy"));
    }
    if (path == "/mnt/data/out/chart.png") return Result<DownloadedFile>({"PNG", "image/png"});
    if (path == "/mnt/data/out/secret.csv") return Result<DownloadedFile>({"s,e", "text/csv"});
    if (path == "/mnt/data/page.html") {
      return Result<DownloadedFile>({"<script>", "text/html"});
    }
    if (path.rfind("/mnt/data/names/", 0) == 0) {
      return Result<DownloadedFile>({"x", "application/octet-stream"});
    }
    return Result<DownloadedFile>(Fail(ErrorCode::kNotFound, "no such file"));
  };
}

// A clock the test moves by hand.
struct TestClock {
  std::shared_ptr<system_clock::time_point> now =
      std::make_shared<system_clock::time_point>(seconds(1'800'000'000));
  FileDownloads::Clock clock() const {
    return [now = now] { return *now; };
  }
};

FileDownloads Downloads(const TestClock& clock, seconds ttl = seconds(3600)) {
  return FileDownloads("k3y", Files(), "", ttl, clock.clock());
}

// "/files/..." of a link minted with base_url "".
std::string Target(const FileDownloads& downloads, const std::string& session,
                   const std::string& path) {
  return downloads.Link("", session, path);
}

TEST_CASE("downloads: links only for files below /mnt/data, each with its expiry", "[unit]") {
  TestClock clock;
  FileDownloads downloads = Downloads(clock);
  std::string link = downloads.Link("http://h:1", "sess_a", "/mnt/data/out/chart.png");
  CHECK(link.rfind("http://h:1/files/sess_a/out/chart.png?expires=1800003600&token=", 0) == 0);
  CHECK(link.size() - link.find("token=") - 6 == 32);  // 128 bits, hex
  CHECK(downloads.Link("http://h:1", "sess_a", "/tmp/x").empty());
  CHECK(downloads.Link("http://h:1", "sess_a", "/mnt/data/").empty());
  CHECK(downloads.Link("http://h:1", "sess_a", "/mnt/data").empty());
  // A path no request could name again gets no link (it would only ever answer 400).
  CHECK(downloads.Link("http://h:1", "sess_a", "/mnt/data/a/../b").empty());
  CHECK(downloads.Link("http://h:1", "sess_a", "/mnt/data/a//b").empty());
  CHECK(downloads.Link("http://h:1", "sess_a", "/mnt/data/a/").empty());
  CHECK(FileDownloads("k", nullptr).Link("http://h:1", "sess_a", "/mnt/data/x").empty());
  // Names are percent-encoded, and the link still opens the file.
  std::string spaced = Target(downloads, "sess_a", "/mnt/data/names/a b?#%.txt");
  CHECK(spaced.rfind("/files/sess_a/names/a%20b%3F%23%25.txt?expires=", 0) == 0);
  CHECK(downloads.Serve(spaced).status == 200);
}

TEST_CASE("downloads: a link opens its file and no other", "[unit]") {
  TestClock clock;
  FileDownloads downloads = Downloads(clock);
  std::string chart = Target(downloads, "sess_a", "/mnt/data/out/chart.png");
  std::string query = chart.substr(chart.find('?'));
  REQUIRE(downloads.Serve(chart).status == 200);
  // The same query on another file of the session, another session, or the same file spelled
  // otherwise (case, a trailing slash, a climb, encoded dots and slashes) opens nothing.
  CHECK(downloads.Serve("/files/sess_a/out/secret.csv" + query).status == 403);
  CHECK(downloads.Serve("/files/sess_b/out/chart.png" + query).status == 403);
  CHECK(downloads.Serve("/files/sess_a/out/Chart.png" + query).status == 403);
  CHECK(downloads.Serve("/files/sess_a/OUT/chart.png" + query).status == 403);
  CHECK(downloads.Serve("/files/sess_a/out/chart.png/" + query).status == 400);
  CHECK(downloads.Serve("/files/sess_a/out//chart.png" + query).status == 400);
  CHECK(downloads.Serve("/files/sess_a/out/./chart.png" + query).status == 400);
  CHECK(downloads.Serve("/files/sess_a/out/chart.png/../secret.csv" + query).status == 400);
  CHECK(downloads.Serve("/files/sess_a/out/chart.png%2F..%2Fsecret.csv" + query).status == 400);
  CHECK(downloads.Serve("/files/sess_a/out/%2e%2e/out/chart.png" + query).status == 400);
  CHECK(downloads.Serve("/files/sess_a/../etc/passwd" + query).status == 400);
  CHECK(downloads.Serve("/files/sess_a%2Fout/chart.png" + query).status == 403);
  // An encoded '/' is still a separator: the same file, the same answer.
  CHECK(downloads.Serve("/files/sess_a/out%2Fchart.png" + query).status == 200);
  // A link of one file does not open a sibling named like it.
  std::string secret = Target(downloads, "sess_a", "/mnt/data/out/secret.csv");
  CHECK(downloads.Serve(secret).status == 200);
  CHECK(secret.substr(secret.find("token=")) != chart.substr(chart.find("token=")));
}

TEST_CASE("downloads: a link expires, and its expiry cannot be moved", "[unit]") {
  TestClock clock;
  FileDownloads downloads = Downloads(clock, seconds(600));
  std::string link = Target(downloads, "sess_a", "/mnt/data/out/chart.png");
  std::string expires = std::to_string(1'800'000'000 + 600);
  REQUIRE(link.find("expires=" + expires + "&") != std::string::npos);

  *clock.now += seconds(600);  // the last second it opens
  CHECK(downloads.Serve(link).status == 200);
  *clock.now += seconds(1);
  auto expired = downloads.Serve(link);
  CHECK(expired.status == 403);
  CHECK(expired.body.find("expired at 2027-01-15T08:10:00Z") != std::string::npos);
  CHECK(expired.body.find("links last 10 min") != std::string::npos);
  CHECK(expired.body.find("call the tool again") != std::string::npos);

  // A later expiry, a missing or a malformed one, or a missing token: a forgery, not "expired".
  for (std::string forged_expires : {"1900000000", "", "18000006OO", "-1", "1800000600.5"}) {
    INFO(forged_expires);
    std::string forged = link;
    forged.replace(forged.find(expires), expires.size(), forged_expires);
    auto refused = downloads.Serve(forged);
    CHECK(refused.status == 403);
    CHECK(refused.body.find("expired") == std::string::npos);
  }
  std::string no_expiry = link;
  no_expiry.erase(no_expiry.find("expires="), ("expires=" + expires + "&").size());
  CHECK(downloads.Serve(no_expiry).status == 403);
  CHECK(downloads.Serve(link.substr(0, link.find('?'))).status == 403);
  CHECK(downloads.Serve(link.substr(0, link.find("token=") + 6) + std::string(32, '0')).status ==
        403);
}

TEST_CASE("downloads: links of another key or server do not open files here", "[unit]") {
  TestClock clock;
  std::string link = Downloads(clock).Link("", "sess_a", "/mnt/data/out/chart.png");
  FileDownloads restarted("another key", Files(), "", seconds(3600), clock.clock());
  CHECK(restarted.Serve(link).status == 403);
  // Another replica's session: 404 saying where it lived, whatever the token.
  FileDownloads replica("k3y", Files(), "r2", seconds(3600), clock.clock());
  auto elsewhere = replica.Serve("/files/sess_r1_0123456789abcdef0123456789abcdef/a?token=x");
  CHECK(elsewhere.status == 404);
  CHECK(elsewhere.body.find("replica r1") != std::string::npos);
  std::string own = replica.Link("", "sess_r2_0123456789abcdef0123456789abcdef", "/mnt/data/x");
  CHECK(own.rfind("/files/sess_r2_0123456789abcdef0123456789abcdef/x?expires=", 0) == 0);
}

TEST_CASE("downloads: errors of the session keep their meaning", "[unit]") {
  TestClock clock;
  FileDownloads downloads = Downloads(clock);
  CHECK(downloads.Serve(Target(downloads, "sess_a", "/mnt/data/missing")).status == 404);
  auto busy = downloads.Serve(Target(downloads, "sess_busy00000000", "/mnt/data/a"));
  CHECK(busy.status == 409);
  CHECK(Header(busy, "Retry-After") != nullptr);
  // The file read is the one the link names.
  auto last_read = std::make_shared<std::string>();
  FileDownloads watched("k3y", Files(last_read), "", seconds(3600), clock.clock());
  CHECK(watched.Serve(watched.Link("", "sess_a", "/mnt/data/out/chart.png")).status == 200);
  CHECK(*last_read == "/mnt/data/out/chart.png");
}

TEST_CASE("downloads: answers never run or get sniffed in a browser", "[unit]") {
  TestClock clock;
  FileDownloads downloads = Downloads(clock);
  auto png = downloads.Serve(Target(downloads, "sess_a", "/mnt/data/out/chart.png"));
  REQUIRE(png.status == 200);
  CHECK(png.body == "PNG");
  CHECK(png.content_type == "image/png");
  CHECK(Header(png, "Content-Disposition")->value == "inline; filename=\"chart.png\"");
  CHECK(Header(png, "X-Content-Type-Options")->value == "nosniff");
  CHECK(Header(png, "Content-Security-Policy")->value.find("sandbox") != std::string::npos);
  auto html = downloads.Serve(Target(downloads, "sess_a", "/mnt/data/page.html"));
  REQUIRE(html.status == 200);
  CHECK(Header(html, "Content-Disposition")->value.rfind("attachment", 0) == 0);
}

TEST_CASE("downloads: a file's name cannot break or smuggle into Content-Disposition", "[unit]") {
  CHECK(ContentDisposition("inline", "chart.png") == "inline; filename=\"chart.png\"");
  // CR, LF, quotes, backslashes, '%' and DEL become '_' in `filename`; the exact name goes in
  // `filename*`, percent-encoded (RFC 8187), so no raw control byte is ever in the value.
  CHECK(ContentDisposition("attachment", "a\r\nSet-Cookie: x=\"1\"\\%\x7f.txt") ==
        "attachment; filename=\"a__Set-Cookie: x=_1____.txt\"; "
        "filename*=UTF-8''a%0D%0ASet-Cookie%3A%20x%3D%221%22%5C%25%7F.txt");
  CHECK(ContentDisposition("attachment", "Grüße.csv") ==
        "attachment; filename=\"Gr____e.csv\"; filename*=UTF-8''Gr%C3%BC%C3%9Fe.csv");
  // Bytes that are not UTF-8 are replaced (U+FFFD) rather than claimed as UTF-8.
  CHECK(ContentDisposition("attachment", "a\xff.bin") ==
        "attachment; filename=\"a_.bin\"; filename*=UTF-8''a%EF%BF%BD.bin");

  // Through Serve: a file whose name carries CR/LF and quotes.
  TestClock clock;
  FileDownloads downloads = Downloads(clock);
  auto answer = downloads.Serve(Target(downloads, "sess_a", "/mnt/data/names/x\r\n\"y\".bin"));
  REQUIRE(answer.status == 200);
  std::string value = Header(answer, "Content-Disposition")->value;
  CHECK(value == "attachment; filename=\"x___y_.bin\"; filename*=UTF-8''x%0D%0A%22y%22.bin");
  for (unsigned char c : value) CHECK((c >= 0x20 && c < 0x7F));
}

}  // namespace
}  // namespace sandbox::mcp::file_downloads_test
