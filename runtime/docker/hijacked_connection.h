// The one request libcurl cannot serve: an HTTP/1.1 request the Docker daemon answers with
// "101 UPGRADED" and then turns into a raw bidirectional stream (attach, exec start).
// libcurl (7.88 here) has no way to hand over a connection after an Upgrade; CONNECT_ONLY would
// leave us writing the request and parsing the reply by hand anyway, on a socket curl still owns
// and cannot half-close. So this file speaks just that request on its own unix socket.
#pragma once

#include <chrono>
#include <string>

#include "runtime/base/fd.h"
#include "runtime/base/result.h"

namespace sandbox::docker {

struct HijackedConnection {
  Fd fd;                    // the raw stream, blocking, CLOEXEC
  std::string early_bytes;  // stream bytes that arrived in the same reads as the response head
};

// Connects to `socket_path`, sends `POST target` with Connection: Upgrade / Upgrade: tcp and
// returns the stream once the daemon answers 101 (or 200 with a raw stream, older daemons).
// Other statuses fail with the daemon's message (EngineError); transport failures and
// `timeout` fail with kSandboxUnavailable.
Result<HijackedConnection> OpenHijacked(const std::string& socket_path, const std::string& target,
                                        std::chrono::milliseconds timeout);

// Parses an HTTP/1.1 response head ("HTTP/1.1 101 UPGRADED\r\n...\r\n\r\n"): the status code
// and the Content-Length (or -1). Fails on anything that is not a status line.
struct ResponseHead {
  int status = 0;
  long content_length = -1;
};
Result<ResponseHead> ParseResponseHead(std::string_view head);

}  // namespace sandbox::docker
