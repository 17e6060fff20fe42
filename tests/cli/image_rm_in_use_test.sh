#!/usr/bin/env bash
# `image rm` keeps an image that a running session runs from (its tree is that sandbox's root),
# as `docker rmi` keeps one a running container uses; once the session ends the image goes.
# A private state dir with a copy of the small image, imported as a `docker export` tar.
# Usage: image_rm_in_use_test.sh /path/to/mcp-sandbox
set -u
bin=$1
image=${SANDBOX_TEST_IMAGE_SMALL:-python-small}
rootfs=$("$bin" image ls --json 2>/dev/null | python3 -c '
import json, sys
for image in json.load(sys.stdin)["images"]:
    if sys.argv[1] in image["names"]: print(image["rootfs"])' "$image" 2>/dev/null)
if [ -z "$rootfs" ] || [ ! -d "$rootfs" ]; then
  echo "SKIPPED: image $image is not in the store (tools/test builds it)"
  exit 77
fi
# shellcheck source=tests/cli/lib.sh
source "$(dirname "$0")/lib.sh"

state=$work/state
tar -C "$rootfs" -cf "$work/flat.tar" .
"$bin" image import "$work/flat.tar" --name tiny --state-dir "$state" >/dev/null 2>&1
check "the copy is imported" 0 $?

echo 'import time; print("up", flush=True); time.sleep(60)' |
  "$bin" run --image tiny --state-dir "$state" --timeout 90 - >"$work/run.out" 2>&1 &
pid=$!
for _ in $(seq 1 300); do
  grep -q up "$work/run.out" && break
  sleep 0.1
done
check "the session runs" up "$(head -c 2 "$work/run.out")"

err=$("$bin" image rm tiny --state-dir "$state" 2>&1 >/dev/null)
check "rm of an image in use fails" 1 $?
case $err in
  *"in use by running session sess_"*) echo "ok   the refusal names the session" ;;
  *) echo "FAIL the refusal names the session: [$err]"; fail=1 ;;
esac
check "the name is kept" tiny "$("$bin" image ls --state-dir "$state" 2>/dev/null | awk 'NR>1 {print $1}')"
digest=$("$bin" image ls --json --state-dir "$state" | python3 -c 'import json,sys; print(json.load(sys.stdin)["images"][0]["digest"])')
"$bin" image rm "$digest" --state-dir "$state" >/dev/null 2>&1
check "rm by digest is refused too" 1 $?
check "the session still runs" 0 "$(kill -0 "$pid" 2>/dev/null; echo $?)"

kill "$pid" 2>/dev/null
wait "$pid" 2>/dev/null
pid=""
check "SIGTERM to run leaves no session record" "" "$(ls "$state/sessions" 2>/dev/null)"
"$bin" image rm tiny --state-dir "$state" >/dev/null 2>&1
check "rm after the session ended" 0 $?
check "the store is empty" "" "$("$bin" image ls --state-dir "$state" 2>/dev/null | awk 'NR>1 {print $1}')"
exit $fail
