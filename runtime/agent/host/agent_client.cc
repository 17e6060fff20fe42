#include "runtime/agent/host/agent_client.h"

#include <spdlog/spdlog.h>

#include "runtime/agent/messages.h"
#include "runtime/agent/run_limits.h"
#include "runtime/agent/run_messages.h"
#include "runtime/agent/wire.h"
#include "runtime/base/base64.h"

namespace sandbox {

using agent::Json;

namespace {

constexpr auto kShutdownWait = std::chrono::seconds(2);

FileInfo FileInfoOf(agent::EntryMessage entry) {
  return FileInfo{.path = std::move(entry.path),
                  .size = entry.size,
                  .mime_type = std::move(entry.mime),
                  .mtime_ms = entry.mtime_ms,
                  .is_dir = entry.is_dir};
}

const char* KindName(RunRequest::Kind kind) {
  return kind == RunRequest::Kind::kShell ? "shell" : "python";
}

}  // namespace

AgentClient::AgentClient(ByteStream& stream)
    : stream_(stream), decoder_(std::make_unique<agent::FrameDecoder>()) {}

AgentClient::~AgentClient() = default;

tl::unexpected<Error> AgentClient::Broken(std::string message) {
  if (broken_.empty()) broken_ = message;
  return Fail(ErrorCode::kSandboxUnavailable, "{}", message);
}

std::string AgentClient::broken_reason() {
  std::lock_guard<std::mutex> lock(call_mutex_);
  return broken_;
}

Status AgentClient::SendRequest(const Json& request, std::string_view payload) {
  if (!broken_.empty()) return Fail(ErrorCode::kSandboxUnavailable, "agent unusable: {}", broken_);
  std::string frame =
      payload.empty() ? agent::EncodeFrame(request) : agent::EncodeFrame(request, payload);
  if (agent::ExceedsFrameLimit(frame)) {
    // init would stop trusting the stream (and end the session): refuse it here instead.
    return Fail(ErrorCode::kInvalidArgument,
                "the request of {} bytes exceeds the agent protocol's limit of {} bytes per frame",
                frame.size() - 4, agent::kMaxFrameBytes);
  }
  if (auto written = stream_.Write(frame); !written) {
    return Broken("writing to the agent: " + written.error().message);
  }
  return {};
}

Result<agent::Message> AgentClient::ReadMessage(Clock::time_point deadline,
                                                const DeadlineExtension& extended) {
  for (;;) {
    auto next = decoder_->Next();
    if (!next) return Broken("malformed frame from the agent: " + next.error().message);
    if (next->has_value()) return std::move(**next);
    char buf[65536];
    auto n = stream_.Read(buf, sizeof buf, deadline);
    if (!n) {
      if (n.error().code == ErrorCode::kTimeout && extended) {
        if (Clock::time_point later = extended(); later > deadline) {
          deadline = later;
          continue;
        }
      }
      if (n.error().code == ErrorCode::kTimeout) return Broken("the agent did not answer in time");
      return Broken("reading from the agent: " + n.error().message);
    }
    if (*n == 0) return Broken("the agent closed its stream (the sandbox has ended)");
    decoder_->Append(std::string_view(buf, *n));
  }
}

void AgentClient::RecordHello(const Json& message) {
  ready_ = true;
  auto hello = agent::Hello::FromJson(message);
  info_.protocol = hello.protocol;
  info_.init_pid = hello.init_pid;
  info_.worker_pid = hello.worker_pid;
  info_.python_version = std::move(hello.python);
  info_.data_dir = std::move(hello.data_dir);
  info_.tmp_dir = std::move(hello.tmp_dir);
}

Result<agent::Message> AgentClient::Await(
    uint64_t id, Clock::time_point deadline,
    const std::function<void(const agent::Message&)>& on_event, const DeadlineExtension& extended) {
  for (;;) {
    SBX_ASSIGN_OR_RETURN(agent::Message received, ReadMessage(deadline, extended));
    const Json& message = received.json;
    std::string type = agent::GetString(message, "type");
    if (type == "hello") {
      RecordHello(message);
      continue;
    }
    uint64_t message_id = agent::GetUint(message, "id");
    if (type == "error" && message_id == 0) {
      // Not an answer: init itself gave up (it exits after saying so).
      return Broken("agent failed: " + agent::GetString(message, "message"));
    }
    if (message_id != id) continue;  // a late answer to an exchange that was abandoned
    if (type == "output") {
      if (on_event) on_event(received);
      continue;
    }
    if (type == "error") {
      auto error = agent::ErrorMessage::FromJson(message);
      return Fail(agent::ErrorCodeFromName(error.code), "{}", error.message);
    }
    return received;
  }
}

Status AgentClient::WaitReady(std::chrono::milliseconds timeout) {
  std::lock_guard<std::mutex> lock(call_mutex_);
  auto deadline = Clock::now() + timeout;
  while (!ready_) {
    auto message = ReadMessage(deadline);
    if (!message) return Fail(std::move(message.error()).Context("waiting for the agent's hello"));
    std::string type = agent::GetString(message->json, "type");
    if (type == "hello") {
      RecordHello(message->json);
    } else if (type == "error") {
      return Broken("the agent could not start: " + agent::GetString(message->json, "message"));
    }
  }
  if (info_.protocol != agent::kProtocolVersion) {
    return Broken(fmt::format("agent speaks protocol {}, expected {}", info_.protocol,
                              agent::kProtocolVersion));
  }
  return {};
}

Result<RunResult> AgentClient::Run(const RunRequest& request, const OutputCallback& on_output) {
  std::lock_guard<std::mutex> lock(call_mutex_);
  uint64_t id = next_id_++;
  Json message = agent::RunRequestMessage{.kind = KindName(request.kind),
                                          .code = request.code,
                                          .fresh = request.fresh,
                                          .timeout_s = request.timeout_s,
                                          .max_output_bytes = request.max_output_bytes,
                                          .cwd = request.cwd}
                     .ToJson(id);
  auto deadline = Clock::now() +
                  std::chrono::duration_cast<Clock::duration>(
                      std::chrono::duration<double>(std::max(request.timeout_s, 0.0))) +
                  kRunDeadlineGrace;
  cancel_requested_ = false;
  SBX_TRY(SendRequest(message));
  run_id_ = id;
  // A Cancel() that came before run_id_ was set could not name this run: send it now.
  if (cancel_requested_.exchange(false)) {
    (void)stream_.Write(agent::EncodeFrame(agent::CancelRequest{}.ToJson(id)));
  }

  size_t delivered[2] = {0, 0};
  auto on_event = [&](const agent::Message& event) {
    int stream = agent::OutputEvent::FromJson(event.json).stream;
    if (stream != 1 && stream != 2) return;
    // The output is the event's payload (a binary frame).
    delivered[stream - 1] += event.payload.size();
    if (on_output) on_output(stream, event.payload);
  };
  auto awaited = Await(id, deadline, on_event);
  run_id_ = 0;
  if (!awaited) return tl::unexpected(std::move(awaited.error()));
  const Json* answer = &awaited->json;
  if (agent::GetString(*answer, "type") != "result") {
    return Broken("unexpected answer to run: " + agent::GetString(*answer, "type"));
  }

  auto parsed = agent::RunResultMessage::FromJson(*answer);
  if (!parsed) return Broken("malformed run result from the agent: " + parsed.error().message);
  RunResult result;
  result.stdout_text = std::move(parsed->stdout_bytes);
  result.stderr_text = std::move(parsed->stderr_bytes);
  result.exit_code = parsed->exit_code;
  result.stdout_truncated = parsed->stdout_truncated;
  result.stderr_truncated = parsed->stderr_truncated;
  result.timed_out = parsed->timed_out;
  result.cancelled = parsed->cancelled;
  result.state_lost = parsed->state_lost;
  preload_pending_ = parsed->preload_pending.value_or(false);
  result.worker_killed = parsed->worker_killed;
  result.term_signal = parsed->term_signal;
  result.duration_s = parsed->duration_s;
  result.data_bytes = parsed->data_bytes;
  result.tmp_bytes = parsed->tmp_bytes;
  // init runs inside the sandbox: what it reports is bounded again here (run_limits.h), so a
  // subverted init cannot make the server build a result of thousands of blocks.
  size_t left_out = 0;
  for (auto& entry : parsed->artifacts) {
    if (result.artifacts.size() >= agent::kMaxRunArtifacts ||
        entry.path.size() > agent::kMaxReportedPathBytes) {
      ++left_out;
      continue;
    }
    result.artifacts.push_back(FileInfoOf(std::move(entry)));
  }
  uint64_t figure_bytes = 0;
  for (auto& figure : parsed->figures) {
    if (result.figures.size() >= agent::kMaxRunFigures ||
        figure.path.size() > agent::kMaxReportedPathBytes) {
      ++left_out;
      continue;
    }
    figure_bytes += figure.png.size();
    if (figure_bytes > agent::kMaxRunFigureBytes) {
      ++left_out;
      continue;
    }
    result.figures.push_back(Figure{std::move(figure.path), std::move(figure.png)});
  }
  if (left_out > 0) {
    spdlog::warn("the agent reported {} figure(s) or artifact(s) past the run's bounds; left out",
                 left_out);
  }
  // Output events stop short of the end (they are throttled): the rest goes out now, so the
  // callback sees exactly the captured output.
  if (on_output) {
    if (result.stdout_text.size() > delivered[0]) {
      on_output(1, std::string_view(result.stdout_text).substr(delivered[0]));
    }
    if (result.stderr_text.size() > delivered[1]) {
      on_output(2, std::string_view(result.stderr_text).substr(delivered[1]));
    }
  }
  return result;
}

void AgentClient::Cancel() {
  cancel_requested_ = true;
  uint64_t id = run_id_.load();
  if (id == 0) return;  // Run() sends it itself once the run has an id
  if (auto written = stream_.Write(agent::EncodeFrame(agent::CancelRequest{}.ToJson(id)));
      !written) {
    spdlog::debug("agent cancel: {}", written.error().message);
  }
}

Status AgentClient::WaitWarm(std::chrono::milliseconds timeout,
                             const std::function<Clock::duration()>& uncounted) {
  std::lock_guard<std::mutex> lock(call_mutex_);
  uint64_t id = next_id_++;
  SBX_TRY(SendRequest(agent::WarmRequest{}.ToJson(id)));
  const Clock::time_point deadline = Clock::now() + timeout;
  DeadlineExtension extended;
  if (uncounted) extended = [&] { return deadline + uncounted(); };
  SBX_ASSIGN_OR_RETURN(agent::Message awaited, Await(id, deadline, {}, extended));
  const Json& answer = awaited.json;
  if (agent::GetString(answer, "type") != "warm") {
    return Broken(fmt::format("unexpected answer '{}' to warm", agent::GetString(answer, "type")));
  }
  auto warm = agent::WarmAnswer::FromJson(answer);
  preload_ = {.imported = std::move(warm.imported), .failed = std::move(warm.failed)};
  return {};
}

AgentClient::PreloadRequest AgentClient::RequestPreload() {
  // Under the call lock, so the frame cannot land inside another request's (a write_chunk's
  // payload); with it held no run is in flight either, so no Cancel() writes meanwhile.
  std::unique_lock<std::mutex> lock(call_mutex_, std::try_to_lock);
  if (!lock.owns_lock()) return PreloadRequest::kBusy;
  if (!SendRequest(agent::PreloadRequest{}.ToJson(next_id_++))) return PreloadRequest::kUnusable;
  return PreloadRequest::kSent;
}

Result<agent::Message> AgentClient::Exchange(const Json& request, const char* expected_type,
                                             std::string_view payload) {
  uint64_t id = agent::GetUint(request, "id");
  SBX_TRY(SendRequest(request, payload));
  SBX_ASSIGN_OR_RETURN(agent::Message answer, Await(id, Clock::now() + kFileOpDeadline, {}));
  if (agent::GetString(answer.json, "type") != expected_type) {
    return Broken(fmt::format("unexpected answer '{}' to {}", agent::GetString(answer.json, "type"),
                              agent::GetString(request, "type")));
  }
  return answer;
}

Status AgentClient::WriteFile(const std::string& path, std::string_view content, bool overwrite,
                              uint32_t mode) {
  size_t offset = 0;
  return WriteFile(
      path,
      [&](size_t max, std::string& out) {
        std::string_view piece = content.substr(offset, max);
        out.append(piece);
        offset += piece.size();
      },
      overwrite, mode);
}

Status AgentClient::WriteFile(const std::string& path, const ContentSource& content, bool overwrite,
                              uint32_t mode) {
  std::lock_guard<std::mutex> lock(call_mutex_);
  // write_open, one write_chunk per kFileChunkBytes, write_commit: no frame holds more than a
  // chunk, and the host holds at most one chunk framed. Any failure after the open aborts
  // it, so init removes the partial file (as it does when the session ends mid-write).
  uint64_t write_id = next_id_++;
  SBX_TRY(Exchange(
      agent::WriteOpenRequest{.path = path, .overwrite = overwrite, .mode = mode}.ToJson(write_id),
      "ok"));
  auto abort = [&](Error error) -> Status {
    if (broken_.empty()) {
      (void)Exchange(agent::WriteAbortRequest{.write = write_id}.ToJson(next_id_++), "ok");
    }
    return tl::unexpected(std::move(error));
  };
  std::string piece;
  for (;;) {
    piece.clear();
    content(agent::kFileChunkBytes, piece);
    if (piece.empty()) break;
    // The content goes raw, as the request's payload (a binary frame).
    if (auto sent =
            Exchange(agent::WriteChunkRequest{.write = write_id}.ToJson(next_id_++), "ok", piece);
        !sent) {
      return abort(std::move(sent.error()));
    }
  }
  if (auto committed =
          Exchange(agent::WriteCommitRequest{.write = write_id}.ToJson(next_id_++), "ok");
      !committed) {
    return abort(std::move(committed.error()));
  }
  return {};
}

Result<std::string> AgentClient::ReadFile(const std::string& path, uint64_t max_bytes) {
  std::lock_guard<std::mutex> lock(call_mutex_);
  // Chunk by chunk at increasing offsets; init refuses a file above max_bytes from its size
  // before it reads anything.
  std::string content;
  uint64_t device = 0;
  uint64_t inode = 0;
  for (;;) {
    uint64_t offset = content.size();
    SBX_ASSIGN_OR_RETURN(agent::Message read,
                         Exchange(agent::ReadFileRequest{.path = path,
                                                         .max_bytes = max_bytes,
                                                         .offset = offset,
                                                         .length = agent::kFileChunkBytes}
                                      .ToJson(next_id_++),
                                  "file"));
    auto answer = agent::FileAnswer::FromJson(read.json);
    // The content is the answer's payload (a binary frame; none for an empty chunk).
    const std::string& chunk = read.payload;
    if (chunk.size() > agent::kFileChunkBytes) {
      return Broken("malformed file content from the agent");
    }
    if (offset == 0) {
      device = answer.dev;
      inode = answer.ino;
      content.reserve(static_cast<size_t>(std::min(answer.size, max_bytes)));
    } else if (answer.dev != device || answer.ino != inode) {
      // Replaced (e.g. renamed over) between two chunks: the parts would not belong together.
      return Fail(ErrorCode::kInternal, "{} was replaced while it was read; read it again", path);
    }
    content += chunk;
    if (content.size() > max_bytes) {
      return Fail(ErrorCode::kArtifactTooLarge, "{} has more than the limit of {} bytes", path,
                  max_bytes);
    }
    // An empty chunk ends the file too, so an agent that never says eof cannot loop us forever.
    if (answer.eof || chunk.empty()) break;
  }
  return content;
}

Result<FileInfo> AgentClient::Stat(const std::string& path) {
  std::lock_guard<std::mutex> lock(call_mutex_);
  SBX_ASSIGN_OR_RETURN(agent::Message answer,
                       Exchange(agent::StatRequest{.path = path}.ToJson(next_id_++), "info"));
  auto info = agent::InfoAnswer::FromJson(answer.json);
  if (!info) return Broken("malformed stat answer");
  return FileInfoOf(std::move(info->entry));
}

Result<std::vector<FileInfo>> AgentClient::ListFiles(const std::string& path, bool recursive) {
  std::lock_guard<std::mutex> lock(call_mutex_);
  SBX_ASSIGN_OR_RETURN(
      agent::Message answer,
      Exchange(agent::ListRequest{.path = path, .recursive = recursive}.ToJson(next_id_++),
               "entries"));
  std::vector<FileInfo> entries;
  for (auto& entry : agent::EntriesAnswer::FromJson(answer.json).entries) {
    entries.push_back(FileInfoOf(std::move(entry)));
  }
  return entries;
}

void AgentClient::Shutdown() {
  std::lock_guard<std::mutex> lock(call_mutex_);
  uint64_t id = next_id_++;
  if (SendRequest(agent::ShutdownRequest{}.ToJson(id))) {
    (void)Await(id, Clock::now() + kShutdownWait, {});
  }
  stream_.CloseWrite();
}

}  // namespace sandbox
