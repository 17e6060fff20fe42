// Gives the C library's freed memory back to the kernel when the server has grown.
//
// Every sandbox start clones the server the way fork(2) does, and the kernel copies the page
// tables of every resident page, so a start costs more the more the server holds. glibc gives
// busy threads arenas of their own (up to 8 per core) and keeps what is freed in each. A
// `sandbox_list_sessions` over 2,000 hibernated sessions allocates about 13 MB for its reply,
// and one such call on each request thread left the server at 224 MiB resident instead of 20,
// which made a cold create 46-52 ms instead of 19-29 (issue #28). Capping the arenas at two
// kept it at 46 MiB but cost the HTTP burst's p99 a third (the threads then share the arenas'
// locks). So the arenas stay as they are and this thread trims them instead: every `period`
// it reads the server's resident size and what malloc accounts in use, and calls malloc_trim
// once the resident memory not in use has grown by `growth`. A trim takes a few ms, and only
// runs after a large allocation was freed.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>

namespace sandbox {

class HeapTrimmer {
 public:
  struct Options {
    std::chrono::milliseconds period{250};
    uint64_t growth_bytes = 32ull << 20;
  };
  // Starts the thread. Does nothing where the C library is not glibc (no malloc_trim).
  explicit HeapTrimmer(Options options);
  HeapTrimmer() : HeapTrimmer(Options{}) {}
  ~HeapTrimmer();  // stops the thread
  HeapTrimmer(const HeapTrimmer&) = delete;
  HeapTrimmer& operator=(const HeapTrimmer&) = delete;

  // How many trims ran (for tests and the debug log).
  uint64_t trims() const { return trims_.load(); }

 private:
  // `resident_floor` and `floor`: the process as the trimmer was made (ResidentBytes and what
  // malloc keeps unused), taken before its thread starts, whenever that thread first runs.
  void Loop(uint64_t resident_floor, uint64_t floor);

  const Options options_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::atomic<uint64_t> trims_{0};
  std::thread thread_;
};

// This process's resident set in bytes (/proc/self/statm), 0 if unreadable.
uint64_t ResidentBytes();

}  // namespace sandbox
