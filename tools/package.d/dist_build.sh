#!/bin/sh
# dist_build.sh: runs inside a clean Debian build root (tools/package --dist RELEASE made it and
# bind-mounted the source at /src, an empty build dir at /build and the release's own ccache
# dir at /ccache). Builds what the package ships and the [unit] tier (not the whole tree), runs
# the [unit] tier (one JUnit file per executable in /build/unit), makes the .deb with CPack
# (dependencies from this release's libraries through dpkg-shlibdeps) and lints it with this
# release's lintian (/build/package/lintian.txt). Exit: 0, or 1 with the failed step on stderr.
# usage: dist_build.sh [all | compile-only]; compile-only stops after the build, whose objects
# stay in the release's ccache (tools/test's background compile).
set -eu
steps=${1:-all}
export CCACHE_DIR=/ccache LANG=C.UTF-8
step() { printf '== %s\n' "$*" >&2; }

step "configure ($(g++ --version | head -1))"
# CMAKE_SKIP_INSTALL_ALL_DEPENDENCY: cpack installs what was built, instead of building `all`
# (every test and benchmark) first.
cmake -S /src -B /build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_SKIP_INSTALL_ALL_DEPENDENCY=ON -DSANDBOX_UNITY=ON >&2
step "build: the binary, its agent, the package's docs and the [unit] tier"
cmake --build /build -j "$(nproc)" \
  --target mcp-sandbox sandbox-init sandbox_package_docs sandbox_unit_tests >&2
ccache --show-stats 2>/dev/null | grep -E 'Hits|Misses' | head -2 >&2 || true
[ "$steps" != compile-only ] || exit 0

step "the [unit] tier"
mkdir -p /build/unit
unit_failed=0
while IFS= read -r exe; do
  name=$(basename "$exe")
  if "$exe" "[unit]" --reporter junit --out "/build/unit/$name.xml" > "/build/unit/$name.log" 2>&1; then
    printf 'ok   %s [unit]\n' "$name" >&2
  else
    rc=$?
    printf 'FAIL %s [unit] (/build/unit/%s.log):\n' "$name" "$name" >&2
    # Exit 77 is a test's skip (tests/support), which ends the whole executable mid-report: a
    # [unit] test needs something this root lacks and belongs under a tag of its own.
    [ "$rc" -ne 77 ] || grep -h 'SKIPPED' "/build/unit/$name.log" >&2 ||
      echo "a [unit] test skipped (exit 77); it needs something this root lacks" >&2
    tail -30 "/build/unit/$name.log" >&2
    unit_failed=1
  fi
done < /build/unit_test_executables.txt

step "cpack"
(cd /build && cpack -B /build/package) >&2
rm -rf /build/package/_CPack_Packages
deb=$(ls /build/package/mcp-sandbox_*_amd64.deb)
dpkg-deb --field "$deb" Depends >&2
step "lintian"
rc=0
lintian --fail-on error --info "$deb" > /build/package/lintian.txt 2>&1 || rc=$?
grep -v 'running with root privileges' /build/package/lintian.txt >&2 || true
[ "$rc" -eq 0 ] || { echo "lintian found errors (above)" >&2; exit 1; }
[ "$unit_failed" -eq 0 ] || { echo "the [unit] tier failed (above)" >&2; exit 1; }
