#!/usr/bin/env bash
# tools/lib/style_check.sh BUILD_DIR RESULTS_DIR: the style the build keeps, as two tests that
# tools/test counts (JUnit files style-format.xml and style-tidy.xml): clang-format over every
# tracked C++ file (.clang-format), and clang-tidy over the product's sources (runtime/ mcp/
# rootfs/ seccomp/ tools/) with the checks .clang-tidy names, and why. A failure carries the
# offending lines.
set -uo pipefail
build_dir=$1 results=$2
cd "$(dirname "$0")/../.."
case_file=tools/lib/junit_case.py

git ls-files '*.cc' '*.h' | xargs clang-format --dry-run 2>&1 | grep -A2 'warning:' \
  > "$results/style-format.log"
python3 "$case_file" "$results/style-format.xml" style \
  "clang-format: every C++ file as .clang-format lays it out" \
  "$([ -s "$results/style-format.log" ] && echo 1 || echo 0)" "$results/style-format.log"

# One clang-tidy per core; a clean file prints nothing.
git ls-files 'runtime/*.cc' 'mcp/*.cc' 'rootfs/*.cc' 'seccomp/*.cc' 'tools/*.cc' |
  xargs -P "$(nproc)" -n 4 clang-tidy -p "$build_dir" --quiet 2>/dev/null |
  grep -E -A3 '(warning|error):' > "$results/style-tidy.log"
python3 "$case_file" "$results/style-tidy.xml" style \
  "clang-tidy: the checks .clang-tidy names, over the product's sources" \
  "$([ -s "$results/style-tidy.log" ] && echo 1 || echo 0)" "$results/style-tidy.log"

for log in format tidy; do
  if [ -s "$results/style-$log.log" ]; then
    echo "style_check: $log found problems:" >&2
    head -40 "$results/style-$log.log" >&2
  fi
done
exit 0
