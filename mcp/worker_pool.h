// A fixed pool of worker threads for tool calls, so the transport's reader stays free to answer
// ping and cancellation while code runs, and calls on different sessions run side by side.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace sandbox::mcp {

class WorkerPool {
 public:
  explicit WorkerPool(size_t threads);
  ~WorkerPool();  // Shutdown()
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  // Queues a task. Returns false once Shutdown() has begun (the task is not run).
  bool Submit(std::function<void()> task);
  // Runs what is queued, then joins every worker. Idempotent.
  void Shutdown();

 private:
  void WorkerLoop();

  std::mutex join_mutex_;  // Shutdown() may be called from two threads
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::function<void()>> queue_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace sandbox::mcp
