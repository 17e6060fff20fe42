// HeapTrimmer (runtime/base/heap_trimmer.h): memory a server's threads freed goes back to the
// kernel once the process has grown, so sandbox starts (which copy the server's page tables)
// do not pay for it.
#include "runtime/base/heap_trimmer.h"

#include <chrono>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace sandbox::testing::heap_trimmer_test {

// Under a sanitizer the allocator is the sanitizer's, which keeps freed memory its own way and
// which malloc_trim does not reach: nothing of glibc's to test. The case is then hidden ("[.]")
// rather than skipped, because the sanitizer tiers run every "[unit]" case of a binary in one
// process, and a skip ends the process (tests/support/test_support.h).
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SANDBOX_GLIBC_MALLOC_TAGS "[.][glibc-malloc]"
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define SANDBOX_GLIBC_MALLOC_TAGS "[.][glibc-malloc]"
#endif
#endif
#ifndef SANDBOX_GLIBC_MALLOC_TAGS
#define SANDBOX_GLIBC_MALLOC_TAGS "[unit]"
#endif

namespace {

constexpr uint64_t kMiB = 1 << 20;

// On a thread of its own (so in an arena of its own, as a request thread's would be): 48 MiB
// in 1 KiB blocks, all freed but the last, which pins the arena's top so free() cannot give
// the rest back by itself. Returns the block still held.
void* FillAndFreeMostOfAnArena() {
  void* kept = nullptr;
  std::thread([&] {
    std::vector<char*> blocks;
    for (uint64_t i = 0; i < 48 * kMiB / 1024; ++i) {
      char* block = new char[1024];
      for (int j = 0; j < 1024; j += 512) block[j] = 1;  // touched: resident
      blocks.push_back(block);
    }
    kept = blocks.back();
    blocks.pop_back();
    for (char* block : blocks) delete[] block;
  }).join();
  return kept;
}

}  // namespace

TEST_CASE("heap trimmer: freed memory goes back to the kernel once the process grew [unit]",
          SANDBOX_GLIBC_MALLOC_TAGS) {
  uint64_t before = ResidentBytes();
  REQUIRE(before > 0);

  // Without a trimmer, the freed blocks stay resident: the situation the trimmer is for.
  void* kept = FillAndFreeMostOfAnArena();
  uint64_t retained = ResidentBytes();
  INFO("resident " << before / kMiB << " MiB before, " << retained / kMiB
                   << " MiB after 48 MiB were allocated and freed");
  REQUIRE(retained >= before + 32 * kMiB);

  // Setup: give that back by hand, so the trimmer starts from a small process.
  delete[] static_cast<char*>(kept);
#if defined(__GLIBC__)
  ::malloc_trim(0);
#endif
  uint64_t start = ResidentBytes();
  HeapTrimmer trimmer({std::chrono::milliseconds(20), 16 * kMiB});
  kept = FillAndFreeMostOfAnArena();
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (trimmer.trims() == 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // the trim's own end
  uint64_t after = ResidentBytes();
  INFO("trimmer started at " << start / kMiB << " MiB; after " << trimmer.trims()
                             << " trim(s): resident " << after / kMiB << " MiB");
  CHECK(trimmer.trims() >= 1);
  CHECK(after + 32 * kMiB <= retained);  // what the same work left resident without it

  // A process that does not grow is left alone.
  uint64_t trims = trimmer.trims();
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  CHECK(trimmer.trims() == trims);
  delete[] static_cast<char*>(kept);
}

}  // namespace sandbox::testing::heap_trimmer_test
