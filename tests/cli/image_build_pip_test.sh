#!/usr/bin/env bash
# `image build --pip` (issue #16 item 4): what Debian does not package, pip-installed into the
# image at build time from the operator's index. This machine has no PyPI, so the test serves
# its own PEP 503 index on loopback (tests/support/pep503_index.py) holding a wheel with a
# dependency, builds the small variant with --pip from it into a store of its own, and runs the
# package in a sandbox of that image; then the same from a wheelhouse with no index; then the
# refusals (no source, a requirement that is an option). Needs root (mmdebstrap --mode=root).
# usage: image_build_pip_test.sh MCP_SANDBOX PEP503_INDEX_PY
set -u
bin=$1 index_py=$2
# The store is large (an image per build): /var/tmp, not a tmpfs /tmp.
work_template=/var/tmp/pip-build-test.XXXXXX
# shellcheck source=tests/cli/lib.sh
source "$(dirname "$0")/lib.sh"
skip_unless_root "mmdebstrap --mode=root"
command -v mmdebstrap >/dev/null || { echo "SKIPPED: mmdebstrap is not installed (tools/test installs it)"; exit 77; }

python3 "$index_py" build "$work/index" sbx-pip-probe==1.4.2 sbx-pip-dep==0.3 \
  --requires sbx-pip-probe:sbx-pip-dep >/dev/null
python3 "$index_py" serve "$work/index" --port-file "$work/port" >/dev/null 2>&1 &
pid=$!  # the index server, stopped at exit (lib.sh)
for _ in $(seq 50); do [ -s "$work/port" ] && break; sleep 0.1; done
url="http://127.0.0.1:$(cat "$work/port")/simple"
export SANDBOX_STATE_DIR=$work/store

"$bin" image build --variant small --name pip-probe --pip sbx-pip-probe==1.4.2 --index-url "$url" \
  > "$work/build.log" 2>&1
check "image build --pip from a local index succeeds" 0 $?
out=$(echo 'import sbx_pip_probe, sbx_pip_dep; print(sbx_pip_probe.__version__, sbx_pip_dep.__version__)' |
  "$bin" run --image pip-probe - 2>&1)
check "the package and its dependency are in the image" "1.4.2 0.3" "$out"
out=$(echo 'print(open("/usr/share/mcp-sandbox/pip-freeze.txt").read().split())' |
  "$bin" run --image pip-probe - 2>&1)
check "the exact versions are recorded in the image" "['sbx-pip-dep==0.3', 'sbx-pip-probe==1.4.2']" "$out"
"$bin" image build --variant small --name pip-probe --pip sbx-pip-probe==1.4.2 --index-url "$url" \
  > "$work/rebuild.log" 2>&1
check "the same --pip again reuses the build (the list is in the recipe)" 1 \
  "$(grep -ci 'reused\|current\|up to date' "$work/rebuild.log" | awk '{print ($1 > 0)}')"

mkdir -p "$work/wheels"
cp "$work/index/packages/"*.whl "$work/wheels/"
"$bin" image build --variant small --name pip-wheels --pip sbx-pip-probe --wheelhouse "$work/wheels" \
  > "$work/wheels.log" 2>&1
check "image build --pip from a wheelhouse, no index" 0 $?
out=$(echo 'import sbx_pip_probe; print(sbx_pip_probe.hello())' | "$bin" run --image pip-wheels - 2>&1)
check "the wheelhouse's package runs" "hello from sbx-pip-probe 1.4.2" "$out"

env -u SANDBOX_INDEX_URL -u SANDBOX_WHEELHOUSE "$bin" image build --variant small --pip x >/dev/null 2>&1
check "--pip with no index and no wheelhouse is a usage error" 2 $?
"$bin" image build --variant small --pip=--index-url=http://evil --index-url "$url" >/dev/null 2>&1
check "a requirement that is an option is refused" 2 $?
[ $fail -eq 0 ] || { echo "--- build log"; tail -30 "$work/build.log"; }
exit $fail
