// What one run may report, enforced by both sides: init bounds what the worker claims (cell code
// can forge the worker's `done` message), and the host bounds what init sends (a sandbox's init
// is not trusted either). Past these the result stays small enough to build in milliseconds.
#pragma once

#include <cstddef>
#include <cstdint>

namespace sandbox::agent {

// Figures (PNG, returned as images) per run, and their bytes together. With both output streams
// at their cap (2 x 32 MiB, base64) the result frame stays under kMaxFrameBytes (96 MiB); a
// figure past the budget is still a file in the data dir, listed as an artifact.
inline constexpr size_t kMaxRunFigures = 32;
inline constexpr uint64_t kMaxRunFigureBytes = uint64_t{4} << 20;
// Entries in a run's artifact list (files new or changed under the data dir).
inline constexpr size_t kMaxRunArtifacts = 1000;
// A reported path longer than this is not a file the sandbox could have (PATH_MAX).
inline constexpr size_t kMaxReportedPathBytes = 4096;

}  // namespace sandbox::agent
