#!/usr/bin/env bash
# tools/lib/clang_tidy_cached.py, the style stage's clang-tidy with its results kept: a clean
# file comes from the cache on the next run, a file with findings is checked and its findings
# printed every run, a header the file includes changes its key (checked again, here with a new
# error), a header added by a new #include is among the inputs from then on, and a clone of
# the same sources elsewhere finds the results. The project is configured, never built: the
# script reads compile commands and clang-tidy's own list of the headers it read (here a
# per-file tree; clang_tidy_batch_test.sh checks a unity tree's batches). A tiny
# CMake project with the repository's .clang-tidy, so each clang-tidy run takes a second.
# Usage: clang_tidy_cache_test.sh
set -u
source "$(dirname "$0")/lib.sh"
project=$work/one
tidy_test_project "$project"
cat > "$project/CMakeLists.txt" <<'EOF'
cmake_minimum_required(VERSION 3.20)
project(tidy_cache CXX)
set(CMAKE_EXPORT_COMPILE_COMMANDS ON)
add_library(tidy_cache STATIC clean.cc dirty.cc)
EOF
printf '#include "shared.h"\nint Clean() { return kValue; }\n' > "$project/clean.cc"
# android-cloexec-open: a descriptor without O_CLOEXEC.
printf '#include <fcntl.h>\nint Dirty() { return open("/x", O_RDONLY); }\n' > "$project/dirty.cc"
printf 'constexpr int kValue = 1;\n' > "$project/shared.h"
cache=$work/cache

configure() { cmake -S "$1" -B "$1/b" -G Ninja >/dev/null; }
# tidy DIR: the script's findings (stdout) in DIR/out, its summary line (stderr) printed.
tidy() {
  (cd "$1" && python3 "$script" b "$cache" clean.cc dirty.cc >out 2>summary)
  cat "$1/summary"
}
found() { grep -c "$2" "$1/out"; }

configure "$project" || { echo "FAIL the project does not configure"; exit 1; }
check "first run: both checked" \
  "clang-tidy: 2 files, 0 clean in the cache, 2 checked, 1 with findings" "$(tidy "$project")"
check "first run: the finding in dirty.cc" 1 \
  "$(found "$project" 'dirty.cc:2:.*android-cloexec-open')"
check "second run: clean.cc from the cache, dirty.cc checked again" \
  "clang-tidy: 2 files, 1 clean in the cache, 1 checked, 1 with findings" "$(tidy "$project")"
check "second run: the finding printed again" 1 "$(found "$project" 'android-cloexec-open')"

# The header changes (the constant renamed): clean.cc's key changes with it, so it is checked
# and the error shows.
printf 'constexpr int kRenamed = 1;\n' > "$project/shared.h"
check "a header changed: clean.cc checked" \
  "clang-tidy: 2 files, 0 clean in the cache, 2 checked, 2 with findings" "$(tidy "$project")"
check "the header's change reaches clean.cc's result" 1 "$(found "$project" "clean.cc:.*kValue")"

# Back to the first header: the key is the first run's again.
printf 'constexpr int kValue = 1;\n' > "$project/shared.h"
check "the same inputs again: clean.cc from the cache" \
  "clang-tidy: 2 files, 1 clean in the cache, 1 checked, 1 with findings" "$(tidy "$project")"

# A new #include: clean.cc changed, so it is checked, and the new header is among its inputs
# from then on: a later change of that header is found too.
printf 'constexpr int kExtra = 2;\n' > "$project/extra.h"
printf '#include "extra.h"\n#include "shared.h"\nint Clean() { return kValue; }\n' \
  > "$project/clean.cc"
check "a new #include: clean.cc checked, then clean" \
  "clang-tidy: 2 files, 0 clean in the cache, 2 checked, 1 with findings" "$(tidy "$project")"
check "the new header among the inputs: clean.cc from the cache" \
  "clang-tidy: 2 files, 1 clean in the cache, 1 checked, 1 with findings" "$(tidy "$project")"
printf 'constexpr int kExtra = undefined_name;\n' > "$project/extra.h"
tidy "$project" >/dev/null
check "a header added by a new #include: its change is found" 1 \
  "$(found "$project" "extra.h:.*undefined_name")"
printf '#include "shared.h"\nint Clean() { return kValue; }\n' > "$project/clean.cc"

# A clone elsewhere (CI clones anew each run): other paths, the same sources.
clone=$work/two
mkdir -p "$clone"
cp "$project"/{.clang-tidy,CMakeLists.txt,clean.cc,dirty.cc,shared.h} "$clone/"
configure "$clone"
check "a clone elsewhere: clean.cc from the cache" \
  "clang-tidy: 2 files, 1 clean in the cache, 1 checked, 1 with findings" "$(tidy "$clone")"
exit $fail
