#include "mcp/http_session_table.h"

namespace sandbox::mcp {

std::shared_ptr<Connection> HttpSessionTable::Find(const std::string& id,
                                                   const std::string& subject,
                                                   Clock::time_point now) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = sessions_.find(id);
  if (it == sessions_.end() || it->second.connection->subject() != subject) return nullptr;
  it->second.last_used = now;
  return it->second.connection;
}

void HttpSessionTable::ExpireLocked(Clock::time_point now) {
  for (auto it = sessions_.begin(); it != sessions_.end();) {
    if (now - it->second.last_used > idle_ttl_ && it->second.connection->in_flight() == 0) {
      it = sessions_.erase(it);
    } else {
      ++it;
    }
  }
}

Status HttpSessionTable::Remember(const std::string& id, std::shared_ptr<Connection> connection,
                                  Clock::time_point now) {
  std::lock_guard<std::mutex> lock(mutex_);
  ExpireLocked(now);
  if (sessions_.count(id) != 0) return {};
  if (sessions_.size() >= max_sessions_) {
    // Make room by forgetting the least recently used idle session.
    auto oldest = sessions_.end();
    for (auto it = sessions_.begin(); it != sessions_.end(); ++it) {
      if (it->second.connection->in_flight() > 0) continue;
      if (oldest == sessions_.end() || it->second.last_used < oldest->second.last_used) {
        oldest = it;
      }
    }
    if (oldest == sessions_.end()) {
      return Fail(ErrorCode::kMaxSessions, "too many MCP sessions are busy");
    }
    sessions_.erase(oldest);
  }
  sessions_[id] = Entry{.connection = std::move(connection), .last_used = now};
  return {};
}

std::shared_ptr<Connection> HttpSessionTable::Remove(const std::string& id,
                                                     const std::string& subject) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = sessions_.find(id);
  if (it == sessions_.end() || it->second.connection->subject() != subject) return nullptr;
  auto connection = std::move(it->second.connection);
  sessions_.erase(it);
  return connection;
}

std::vector<std::shared_ptr<Connection>> HttpSessionTable::All() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<std::shared_ptr<Connection>> all;
  all.reserve(sessions_.size());
  for (const auto& [id, entry] : sessions_) all.push_back(entry.connection);
  return all;
}

size_t HttpSessionTable::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return sessions_.size();
}

}  // namespace sandbox::mcp
