#!/usr/bin/env bash
# tools/lib/clang_tidy_cached.py over a unity tree (tools/test's build-tidy): the sources CMake
# batches are checked as one translation unit per batch, and the findings must be those of a
# per-file run, no more and no fewer. A tiny CMake project with the repository's .clang-tidy and
# one planted violation of each family it enables (naming, bugprone, cloexec, performance,
# override, nullptr), a .cc file that includes another (bugprone-suspicious-include, which a
# batch's own #include lines must not trip), a violation in a header (reported by neither: no
# header filter names it), a source two targets compile (reported once), clean sources and one
# that a target with UNITY_BUILD off compiles alone (checked alone); it
# is configured twice, per file and in unity batches, and checked both ways. Then the result
# cache per batch: a clean batch comes from the cache, and a change to one of its sources checks
# that batch again, and a clone elsewhere finds the results.
# Usage: clang_tidy_batch_test.sh
set -u
source "$(dirname "$0")/lib.sh"
project=$work/project
tidy_test_project "$project"
cat > "$project/CMakeLists.txt" <<'EOF'
cmake_minimum_required(VERSION 3.20)
project(tidy_batch CXX)
set(CMAKE_CXX_STANDARD 20)
set(CMAKE_EXPORT_COMPILE_COMMANDS ON)
add_library(untidy STATIC naming.cc bugprone.cc cloexec.cc performance.cc override.cc
            nullptr.cc includes_source.cc shared.cc)
add_library(tidy STATIC clean_one.cc clean_two.cc shared.cc)
add_library(alone STATIC alone.cc)
set_target_properties(alone PROPERTIES UNITY_BUILD OFF)
EOF
cd "$project" || exit 1
# Each finding planted on a line of its own; `expected` lists them as file:line check.
printf 'int bad_Name() { return 1; }\n' > naming.cc
printf '#include <string>\n#include <utility>\nstd::size_t Moved() {\n  std::string s = "x";
  std::string t = std::move(s);\n  return s.size() + t.size();\n}\n' > bugprone.cc
printf '#include <fcntl.h>\nint Open() { return open("/x", O_RDONLY); }\n' > cloexec.cc
printf '#include <string>\n#include <vector>\nstd::size_t Sum(const std::vector<std::string>& v) {
  std::size_t n = 0;\n  for (auto s : v) n += s.size();\n  return n;\n}\n' > performance.cc
printf 'struct Base {\n  virtual ~Base() = default;\n  virtual int Get() { return 0; }\n};
struct Derived : Base {\n  virtual int Get() { return 1; }\n};
int UseDerived() { return Derived().Get(); }\n' \
  > override.cc
printf 'int* Pointer() { return 0; }\n' > nullptr.cc
printf '#include "piece.cc"\nint Whole() { return Piece(); }\n' > includes_source.cc
printf 'inline int Piece() { return 2; }\n' > piece.cc
# A header's finding: a per-file run reports none (no header filter), so a batch must not either.
printf 'inline int header_Name() { return 3; }\n' > header.h
printf '#include "header.h"\nint Shared() { return header_Name(); }\n' > shared.cc
printf '#include <string>\nint CleanOne() { return static_cast<int>(std::string("a").size()); }\n' \
  > clean_one.cc
printf 'int CleanTwo() { return 2; }\n' > clean_two.cc
printf 'int Alone() { return 4; }\n' > alone.cc
sources=(naming.cc bugprone.cc cloexec.cc performance.cc override.cc nullptr.cc
         includes_source.cc shared.cc clean_one.cc clean_two.cc alone.cc)
expected="bugprone.cc:6 bugprone-use-after-move
cloexec.cc:2 android-cloexec-open
includes_source.cc:1 bugprone-suspicious-include
naming.cc:1 readability-identifier-naming
nullptr.cc:1 modernize-use-nullptr
override.cc:6 modernize-use-override
performance.cc:5 performance-for-range-copy"

cmake -S . -B per-file -G Ninja >/dev/null &&
  cmake -S . -B batches -G Ninja -DCMAKE_UNITY_BUILD=ON -DCMAKE_UNITY_BUILD_BATCH_SIZE=16 \
    >/dev/null || { echo "FAIL the project does not configure"; exit 1; }
# findings TREE CACHE: each finding as file:line check, sorted; the summary line in TREE.summary.
findings() {
  python3 "$script" "$1" "$2" "${sources[@]}" 2>"$1.summary" |
    sed -nE "s|^$project/([^:]+):([0-9]+):[0-9]+: (warning\|error): .*\[([a-z-]+).*\]$|\1:\2 \4|p" |
    sort
}

check "per file: each planted finding, none in the header" "$expected" \
  "$(findings per-file "$work/cache")"
check "per file: each source a translation unit" \
  "clang-tidy: 11 files, 0 clean in the cache, 11 checked, 7 with findings" \
  "$(cat per-file.summary)"
check "in batches: the same findings" "$expected" "$(findings batches "$work/cache")"
units="clang-tidy: 11 files in 3 translation units (2 batches)"
check "in batches: two batches (shared.cc once), alone.cc alone" \
  "$units, 0 clean in the cache, 3 checked, 1 with findings" \
  "$(cat batches.summary)"

# The clean batch (clean_one.cc, clean_two.cc) and alone.cc come from the cache; a changed source
# checks its batch again.
findings batches "$work/cache" >/dev/null
check "in batches again: the clean batch from the cache" \
  "$units, 2 clean in the cache, 1 checked, 1 with findings" \
  "$(cat batches.summary)"
printf 'int CleanTwo() { return 22; }\n' > clean_two.cc
findings batches "$work/cache" >/dev/null
check "a source changed: its batch checked again" \
  "$units, 1 clean in the cache, 2 checked, 1 with findings" \
  "$(cat batches.summary)"

# A clone elsewhere (CI clones anew each run): the batches' copies name other paths, and the
# clean batch comes from the cache all the same.
clone=$work/clone
mkdir -p "$clone"
cp .clang-tidy CMakeLists.txt ./*.cc ./*.h "$clone/"
cd "$clone" || exit 1
cmake -S . -B batches -G Ninja -DCMAKE_UNITY_BUILD=ON -DCMAKE_UNITY_BUILD_BATCH_SIZE=16 >/dev/null
python3 "$script" batches "$work/cache" "${sources[@]}" >/dev/null 2>batches.summary
check "a clone elsewhere: the clean batch and alone.cc from the cache" \
  "$units, 2 clean in the cache, 1 checked, 1 with findings" \
  "$(cat batches.summary)"
exit $fail
