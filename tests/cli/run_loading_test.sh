#!/usr/bin/env bash
# What a one-shot `mcp-sandbox run` loads (issue #41): libcurl and the 26 libraries it pulls in
# are opened only when the Docker backend or an OAuth key fetch needs them
# (runtime/docker/libcurl_on_demand.h), and libsystemd only when an ordinary user's limits need
# a scope from its systemd manager (runtime/cgroup/libsystemd_on_demand.cc), so a run on the
# namespace backend as root loads neither; the Docker backend loads libcurl at its first request
# and runs the same snippet. libarchive is opened at its first use too (an image import), never
# by a run of a stored image (rootfs/libarchive_on_demand.h), and so are libcrypto
# (runtime/crypto/libcrypto_on_demand.h: digests, HMACs, signature checks) and libcjose with its
# jansson (mcp/auth/libcjose_on_demand.h: OAuth), which a run of a stored image never needs. The
# dynamic linker's own log (LD_DEBUG=files) says what was loaded. Needs root (the shared store); the
# Docker part needs a daemon that answers.
# Usage: run_loading_test.sh /path/to/mcp-sandbox
set -u
bin=$1
image=${SANDBOX_TEST_IMAGE_SMALL:-python-small}
# shellcheck source=tests/cli/lib.sh
source "$(dirname "$0")/lib.sh"
skip_unless_root "sandboxes of the shared store"
skip_unless_image "$bin" "$image"
borrow_shared_store "$bin" "$work/state"

run_loading() {  # run_loading BACKEND: "<output>|<libcurl loads>|<libsystemd loads>"
  local out
  out=$(LD_DEBUG=files LD_DEBUG_OUTPUT="$work/ld.$1" "$bin" run --backend "$1" --image "$image" - \
    <<<'print(6 * 7)' 2>/dev/null)
  echo "$out|$(cat "$work/ld.$1".* | grep -c 'file=libcurl\.so\.4 .*generating link map')|$(
    cat "$work/ld.$1".* | grep -c 'file=libsystemd\.so\.0 .*generating link map')"
  rm -f "$work/ld.$1".*
}

check "the binary does not name libcurl or libsystemd among its DT_NEEDED libraries" 0 \
  "$(readelf -d "$bin" | grep -c 'NEEDED.*lib\(curl\|systemd\)')"
check "a one-shot run on the namespace backend loads neither" "42|0|0" "$(run_loading namespace)"
# An ordinary user (the CI recipe's), here nobody with a state dir of its own borrowing the same
# images: no libcurl either. (libsystemd it loads where its limits come from a scope of its
# systemd manager, on cgroup v2: that count is not checked.)
if command -v setpriv >/dev/null; then
  chmod 711 "$work"
  mkdir -p "$work/user/state"
  for part in images archives; do ln -s "$SANDBOX_STATE_DIR/$part" "$work/user/state/$part"; done
  chown -R 65534:65534 "$work/user"
  out=$(setpriv --reuid=65534 --regid=65534 --clear-groups env HOME="$work/user" \
    SANDBOX_STATE_DIR="$work/user/state" LD_DEBUG=files LD_DEBUG_OUTPUT="$work/user/ld" \
    "$bin" run --backend namespace --image "$image" - <<<'print(6 * 7)' 2>/dev/null)
  check "as an ordinary user, a one-shot run loads no libcurl" "42|0" \
    "$out|$(cat "$work/user/ld".* | grep -c 'file=libcurl\.so\.4 .*generating link map')"
else
  echo "skip the ordinary user: no setpriv (util-linux)"
fi
# libarchive and the ten libraries it pulls in: opened only when an archive is read or written
# (rootfs/libarchive_on_demand.h), as by an image import, never by a run of a stored image.
check "the binary does not name libarchive among its DT_NEEDED libraries" 0 \
  "$(readelf -d "$bin" | grep -c 'NEEDED.*libarchive')"
out=$(LD_DEBUG=files LD_DEBUG_OUTPUT="$work/ld.archive" "$bin" run --backend namespace \
  --image "$image" - <<<'print(6 * 7)' 2>/dev/null)
check "a one-shot run loads no libarchive" "42|0" \
  "$out|$(cat "$work/ld.archive".* | grep -c 'file=libarchive\.so\.13 .*generating link map')"
rm -f "$work/ld.archive".*
check "the binary does not name libcrypto or libcjose among its DT_NEEDED libraries" 0 \
  "$(readelf -d "$bin" | grep -c 'NEEDED.*lib\(crypto\|cjose\|jansson\)')"
out=$(LD_DEBUG=files LD_DEBUG_OUTPUT="$work/ld.crypto" "$bin" run --backend namespace \
  --image "$image" - <<<'print(6 * 7)' 2>/dev/null)
check "a one-shot run loads neither libcrypto nor libcjose" "42|0" \
  "$out|$(cat "$work/ld.crypto".* | grep -c 'file=lib\(crypto\.so\.3\|cjose\.so\.0\) .*generating link map')"
rm -f "$work/ld.crypto".*
# Opened at first use, libcjose is opened at the start of a server that needs it: without it
# (hidden here in a mount namespace of this test's own) serve refuses to start, naming it,
# rather than refusing every token later.
cjose=$(ldconfig -p | awk '/libcjose\.so\.0 .*x86-64/ { print $NF; exit }')
if [ -n "$cjose" ] && command -v unshare >/dev/null; then
  out=$(unshare -m sh -c 'mount --bind /dev/null "$(readlink -f "$1")" && shift &&
    SANDBOX_OAUTH_ISSUER=https://idp.invalid timeout 20 "$@" serve --http 127.0.0.1:0 \
      </dev/null 2>&1; echo "exit $?"' sh "$cjose" "$bin" | tail -n 2)
  check "serve with an OAuth issuer and no libcjose refuses to start, naming it" "1|1" \
    "$(grep -c 'needs libcjose.so.0' <<<"$out" | sed 's/^[1-9][0-9]*$/1/')|$(grep -c '^exit 1$' <<<"$out")"
else
  echo "skip serve without libcjose: no libcjose.so.0 in ldconfig's cache, or no unshare"
fi
archive=$(find -L "$SANDBOX_STATE_DIR/archives" -maxdepth 1 -name "python-small-small-*.tar" 2>/dev/null | head -n 1)
if [ -n "$archive" ]; then
  LD_DEBUG=files LD_DEBUG_OUTPUT="$work/ld.import" SANDBOX_STATE_DIR="$work/import" \
    "$bin" image import "$archive" --name imported >/dev/null 2>&1
  check "an image import loads libarchive and libcrypto (its digests) at their first use and imports" "1|1|42" \
    "$(cat "$work/ld.import".* | grep -c 'file=libarchive\.so\.13 .*generating link map')|$(
      cat "$work/ld.import".* | grep -c 'file=libcrypto\.so\.3 .*generating link map')|$(
      SANDBOX_STATE_DIR="$work/import" "$bin" run --backend namespace --image imported - \
        <<<'print(6 * 7)' 2>/dev/null)"
else
  echo "skip the import: no archive of the small image in the store"
fi
if "$(dirname "$0")/../../tools/lib/dockerd.sh" status >/dev/null 2>&1; then
  check "the Docker backend loads libcurl at its first request and runs the snippet" "42|1|0" \
    "$(run_loading docker)"
elif [ "${SANDBOX_TEST_REQUIRE_DOCKER:-}" = 1 ]; then
  # Where tools/test requires the Docker half, a daemon that does not answer is a failure, not
  # a quiet pass of the namespace half alone.
  check "a Docker daemon answers where tools/test requires one" "yes" "no"
else
  echo "skip the Docker backend: no Docker daemon answers (tools/lib/dockerd.sh start)"
fi
exit $fail
