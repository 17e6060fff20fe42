#include "runtime/base/heap_trimmer.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <spdlog/spdlog.h>

namespace sandbox {

uint64_t ResidentBytes() {
  // "size resident shared text lib data dt", in pages. One read of a short file: no stdio, no
  // allocation, since this runs every quarter second.
  int fd = ::open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  char text[128];
  ssize_t got = ::read(fd, text, sizeof text - 1);
  ::close(fd);
  if (got <= 0) return 0;
  text[got] = '\0';
  unsigned long long size = 0, resident = 0;
  if (std::sscanf(text, "%llu %llu", &size, &resident) != 2) return 0;
  return resident * static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
}

namespace {

#if defined(__GLIBC__)
// Resident bytes malloc does not account as in use: freed memory it keeps, plus what is not
// malloc's at all (code, stacks, other mappings), which stays about the same.
uint64_t ResidentNotInUse() {
  uint64_t resident = ResidentBytes();
  struct mallinfo2 info = ::mallinfo2();
  uint64_t in_use = info.uordblks + info.hblkhd;
  return resident > in_use ? resident - in_use : 0;
}
#endif

}  // namespace

HeapTrimmer::HeapTrimmer(Options options) : options_(options) {
#if defined(__GLIBC__)
  // The marks are the process's now: a thread scheduled late (a loaded host) would otherwise
  // take them after the growth it is there to see, and never trim.
  uint64_t resident_floor = ResidentBytes();
  uint64_t floor = ResidentNotInUse();
  thread_ = std::thread([this, resident_floor, floor] { Loop(resident_floor, floor); });
#endif
}

HeapTrimmer::~HeapTrimmer() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void HeapTrimmer::Loop([[maybe_unused]] uint64_t resident_floor, [[maybe_unused]] uint64_t floor) {
#if defined(__GLIBC__)
  // A trim is due once the resident memory malloc does not use has grown by `growth` over its
  // low-water mark: memory was freed and kept. A process that grew by memory in use (many
  // sessions) is left alone. What a trim cannot give back (a page held by one live block)
  // becomes the new mark, so it is not tried again every period.
  //
  // mallinfo2 walks every arena's free lists under the arena's lock: microseconds for a tidy
  // heap, 11 ms for 80,000 free chunks in 16 arenas. So it runs only while the process is
  // `growth` above its smallest resident size (one read of a small file tells), and at most
  // once per 100 times its own last duration: never more than 1 % of a core.
  auto next_look = std::chrono::steady_clock::now();
  std::unique_lock<std::mutex> lock(mutex_);
  while (!wake_.wait_for(lock, options_.period, [this] { return stopping_; })) {
    uint64_t resident = ResidentBytes();
    resident_floor = std::min(resident_floor, resident);
    auto now = std::chrono::steady_clock::now();
    if (resident < resident_floor + options_.growth_bytes || now < next_look) continue;
    uint64_t kept = ResidentNotInUse();
    next_look = now + 100 * (std::chrono::steady_clock::now() - now);
    floor = std::min(floor, kept);
    if (kept < floor + options_.growth_bytes) continue;
    lock.unlock();
    auto start = std::chrono::steady_clock::now();
    ::malloc_trim(0);
    double took_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    uint64_t kept_after = ResidentNotInUse();
    ++trims_;
    spdlog::debug("heap: malloc kept {} MiB it does not use, {} MiB after malloc_trim ({:.1f} ms)",
                  kept >> 20, kept_after >> 20, took_ms);
    floor = kept_after;
    lock.lock();
  }
#endif
}

}  // namespace sandbox
