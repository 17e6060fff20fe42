# Sourced by tools/run, tools/test and tools/bench: package installation and the build.
# Everything here is idempotent: a second run does no finished work again.

SANDBOX_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD_DIR=${SANDBOX_BUILD_DIR:-$SANDBOX_ROOT/build}

# The Debian packages the build, the image recipe and the tests need.
BUILD_PACKAGES=(build-essential cmake ninja-build pkg-config git python3
  libseccomp-dev libcap-dev nlohmann-json3-dev libspdlog-dev libfmt-dev catch2
  libarchive-dev libsystemd-dev libboost-dev libcpp-httplib-dev libcurl4-openssl-dev libexpected-dev libssl-dev
  libzstd-dev zlib1g-dev libcjose-dev libjansson-dev ccache)
IMAGE_PACKAGES=(mmdebstrap)
# tools/package: dpkg-shlibdeps (dpkg-dev) computes the .deb's dependencies; lintian checks it;
# groff-base checks its man page.
PACKAGE_PACKAGES=(dpkg-dev lintian groff-base)
# What the tests use besides the build: skopeo and umoci make real image archives, python3's
# data stack runs the agent on the host, docker.io is the fallback backend's daemon, procps
# serves Docker's /top, nodejs/npm run the MCP SDK end-to-end tests, util-linux gives setpriv,
# clang-format and clang-tidy keep the style (tools/lib/style_check.sh), and FUZZ_PACKAGES build
# the fuzz targets and the ASan+UBSan unit tier (tools/lib/asan_stage.sh).
# clang and its compiler-rt (libFuzzer and the sanitizer runtimes), the same version as
# clang-format and clang-tidy (14 on bookworm).
FUZZ_PACKAGES=(clang libclang-rt-dev)
# prometheus: promtool checks the /metrics exposition, and an e2e test scrapes a server with it.
# kubernetes-client (kubectl, for the offline Kubernetes checks) only where no kubectl is
# installed: another package's /usr/bin/kubectl would make dpkg refuse it.
# chromium: the MCP Apps views are tested in headless Chromium (tests/e2e/apps.test.mjs).
# runsc (gVisor): the behaviour suite's gvisor part and the gVisor backend's own tests.
TEST_PACKAGES=(skopeo umoci python3-matplotlib python3-pandas python3-dill docker.io procps curl haproxy iptables chromium
  $(command -v kubectl >/dev/null || echo kubernetes-client)
  util-linux qemu-system-x86 busybox-static clang-format clang-tidy prometheus
  runsc
  "${FUZZ_PACKAGES[@]}")

# Node.js and npm for the e2e tests: Debian's packages unless a Node.js with npm is already
# installed (a vendor's nodejs package ships npm itself and conflicts with Debian's npm).
ensure_node() {
  command -v node >/dev/null && command -v npm >/dev/null && return 0
  ensure_packages nodejs npm
}

log() { printf '%s\n' "$*" >&2; }

# For a benchmark that needs a Docker daemon: the one answering already, or one
# tools/lib/dockerd.sh starts now and stops when the script exits. Prints "n/a: ..." and exits 0
# (the benchmark does not apply) when none can be had.
bench_dockerd_up() {
  local dockerd_sh=$SANDBOX_ROOT/tools/lib/dockerd.sh
  "$dockerd_sh" status >/dev/null 2>&1 && return 0
  "$dockerd_sh" start >&2 || { echo "n/a: no Docker daemon could be started"; exit 0; }
  trap '"$SANDBOX_ROOT/tools/lib/dockerd.sh" stop >&2' EXIT
}

# ensure_packages PKG... : installs what is missing (as root), or prints the command and stops.
ensure_packages() {
  local missing=() pkg
  for pkg in "$@"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'ok installed' || missing+=("$pkg")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  if [ "$(id -u)" -ne 0 ]; then
    log "missing Debian packages: ${missing[*]}"
    log "install them with:"
    log "  sudo apt-get update && sudo apt-get install -y --no-install-recommends ${missing[*]}"
    exit 1
  fi
  log "installing ${missing[*]}"
  if [ -z "${SANDBOX_APT_UPDATED:-}" ]; then
    apt-get update -qq >&2
    SANDBOX_APT_UPDATED=1
  fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
}

# configure_project BUILD_DIR [extra cmake args...]: configures BUILD_DIR (Ninja, RelWithDebInfo).
configure_project() {
  local dir=$1; shift
  cmake -S "$SANDBOX_ROOT" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >&2
}

# build_project [BUILD_DIR] [extra cmake args...]: configure once, then build incrementally.
# Extra args are applied to an existing build too (a re-configure takes a second or two).
# SANDBOX_BUILD_TARGETS (space-separated) builds only those targets and what they need.
build_project() {
  local dir=${1:-$BUILD_DIR}; shift || true
  if [ ! -f "$dir/build.ninja" ] || [ $# -gt 0 ]; then
    configure_project "$dir" "$@"
  fi
  local targets=()
  [ -z "${SANDBOX_BUILD_TARGETS:-}" ] || read -r -a targets <<<"--target $SANDBOX_BUILD_TARGETS"
  cmake --build "$dir" -j "$(nproc)" "${targets[@]}" >&2
}

# Caches that outlive a checkout: the Debian root tarballs mmdebstrap makes (the package stage's
# fresh roots and tools/package --dist's build roots) and each build root's own ccache. CI builds
# a fresh clone on the same machine every time; kept under build/ they would be made anew each run.
SANDBOX_CACHE_DIR=${SANDBOX_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/mcp-sandbox}

# tools/package --dist RELEASE's clean build root: what tools/test installs on the host to build
# and package, from RELEASE's archive; `file` for CPack; systemd-dev for systemd.pc, which says
# where units go (Debian 12 has it in systemd, and no systemd-dev). Cached in DIST_BUILD_ROOTS.
DIST_BUILD_ROOTS=$SANDBOX_CACHE_DIR/build-roots
dist_build_packages() {
  local packages
  packages=$(IFS=,; echo "${BUILD_PACKAGES[*]},${PACKAGE_PACKAGES[*]},file")
  [ "$1" = bookworm ] || packages+=,systemd-dev
  echo "$packages"
}

# What a serving server needs: the binary and the agent it puts into every sandbox (a
# dependency of the binary). tools/run builds only these; tools/test builds the rest.
SERVER_TARGETS="mcp-sandbox"

# vm_kernel_cache KERNEL: prints the run-in-vm cache dir for the kernel package KERNEL
# (linux-image-amd64: run-in-vm's own), making it with vm_kernel_cache.sh for a kernel whose
# modules run-in-vm cannot pick (Debian 13's: built-in virtio, modules under /usr/lib), again
# when the default cache's initramfs (run-in-vm's scripts) is newer. Fails when it cannot.
vm_kernel_cache() {
  local kernel=$1 default=${XDG_CACHE_HOME:-$HOME/.cache}/run-in-vm
  [ "$kernel" != linux-image-amd64 ] || { echo "$default"; return 0; }
  local cache=$default-$kernel
  if [ ! -s "$cache/initrd.gz" ] || ! cmp -s "$cache/initrd-version" "$default/initrd-version"; then
    "$SANDBOX_ROOT/tests/runtime/cgroup/vm_kernel_cache.sh" "$kernel" "$cache" >&2 || return 1
  fi
  echo "$cache"
}
