#include "runtime/agent/init/zygote.h"

#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>

#include "runtime/agent/wire.h"
#include "runtime/base/fd_ops.h"

namespace sandbox::agent {

namespace {

// The largest packet the zygote sends (its ready packet lists the modules and failures).
constexpr size_t kMaxPacket = 64 << 10;
constexpr int kForkedFds = 5;

}  // namespace

Result<std::unique_ptr<Zygote>> Zygote::Start(const ChildSpec& worker_spec,
                                              const std::string& modules) {
  std::unique_ptr<Zygote> zygote(new Zygote());
  Fd theirs;
  SBX_TRY(MakeSocketPair(SOCK_SEQPACKET, zygote->socket_, theirs, "zygote"));
  ChildSpec spec = worker_spec;
  spec.control_channel = false;
  spec.fd3 = theirs.get();
  spec.argv.push_back("--zygote");
  spec.argv.push_back(modules);
  SBX_ASSIGN_OR_RETURN(zygote->child_, SpawnChild(spec));
  // Its output is never read: it writes nothing but a warning or two, far below a pipe's size.
  zygote->child_.stdout_read.Reset();
  return zygote;
}

Zygote::~Zygote() {
  if (child_.pid > 0) ::kill(-child_.pid, SIGKILL);
}

Result<std::string> Zygote::Receive(std::chrono::milliseconds timeout) {
  struct pollfd p {
    socket_.get(), POLLIN, 0
  };
  int ready = 0;
  do {
    ready = ::poll(&p, 1, static_cast<int>(timeout.count()));
  } while (ready < 0 && errno == EINTR);
  if (ready == 0) return Fail(ErrorCode::kInternal, "the preload zygote did not answer in time");
  if (ready < 0) return FailSys("poll");
  std::string packet(kMaxPacket, '\0');
  ssize_t n = ::recv(socket_.get(), packet.data(), packet.size(), MSG_DONTWAIT);
  if (n < 0) return FailSys("recv");
  if (n == 0) return Fail(ErrorCode::kInternal, "the preload zygote exited");
  packet.resize(static_cast<size_t>(n));
  return packet;
}

Status Zygote::ReadReady() {
  SBX_ASSIGN_OR_RETURN(std::string packet, Receive(std::chrono::milliseconds(0)));
  Json message = Json::parse(packet, nullptr, /*allow_exceptions=*/false);
  if (!message.is_object() || GetString(message, "type") != "ready") {
    return Fail(ErrorCode::kInternal, "the preload zygote said something else than ready");
  }
  imported_ = GetStrings(message, "imported");
  failed_ = GetStrings(message, "failed");
  ready_ = true;
  return {};
}

Result<ChildProcess> Zygote::Fork(std::chrono::milliseconds timeout, bool warm_up) {
  ChildProcess child;
  SBX_ASSIGN_OR_RETURN(ChildEnds ends, MakeChildEnds(/*control_channel=*/true, child));
  const int fds[kForkedFds] = {ends.stdin_null.get(), ends.stdout_write.get(),
                               ends.stderr_write.get(), ends.control_in_read.get(),
                               ends.control_out_write.get()};
  if (auto sent = SendFds(socket_.get(), fds, warm_up ? 'W' : 'F'); !sent) {
    return Fail(std::move(sent.error()).Context("to the preload zygote"));
  }

  SBX_ASSIGN_OR_RETURN(std::string packet, Receive(timeout));
  Json answer = Json::parse(packet, nullptr, /*allow_exceptions=*/false);
  if (!answer.is_object() || GetString(answer, "type") != "forked") {
    return Fail(ErrorCode::kInternal, "the preload zygote could not fork: {}",
                answer.is_object() ? GetString(answer, "message") : std::string("bad answer"));
  }
  int64_t pid = GetInt(answer, "pid");
  if (pid <= 1) return Fail(ErrorCode::kInternal, "the preload zygote sent pid {}", pid);
  child.pid = static_cast<pid_t>(pid);
  return child;
}

}  // namespace sandbox::agent
