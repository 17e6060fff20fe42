#!/usr/bin/env bash
# The CI recipe of docs/ci.md, exactly as written (the block between <!-- ci-recipe --> markers), run
# by an ordinary user with passwordless sudo, as on a hosted CI runner, in a fresh minimal Debian
# root: once with a snippet that prints (expects "ok" and its output), once with one that never
# ends (expects "timed out"). Prints "ok"/"FAIL" lines; exits 1 when a check failed.
# usage: ci_recipe_test.sh PAGE DEB IMAGE_ARCHIVE WORK_DIR
set -uo pipefail
readme=$1 deb=$2 archive=$3 work=$4
here=$(cd "$(dirname "$0")" && pwd)
debian_root=$here/../../tools/package.d/debian_root.sh
root=$work/root
fail=0

recipe=$(awk '/<!-- ci-recipe -->/ { on = 1; next } /<!-- \/ci-recipe -->/ { on = 0 }
              on && !/^```/ { print }' "$readme")
if [ -z "$recipe" ]; then echo "FAIL the page has no ci-recipe block"; exit 1; fi

"$debian_root" make "$root" || { echo "FAIL fresh root: mmdebstrap failed"; exit 1; }
job=$root/home/runner/job
"$debian_root" enter "$root" sh -c '
  useradd --create-home --shell /bin/bash runner &&
  echo "runner ALL=(ALL) NOPASSWD:ALL" > /etc/sudoers.d/runner && chmod 440 /etc/sudoers.d/runner' ||
  { echo "FAIL could not add the runner user"; exit 1; }
mkdir -p "$job"
cp "$deb" "$job/"
cp "$archive" "$job/python.tar"
printf '%s\n' "$recipe" > "$job/recipe.sh"
run_recipe() {  # run_recipe SNIPPET: the recipe's output, as the runner user in its job dir
  printf '%s\n' "$1" > "$job/snippet.py"
  chown -R 1000:1000 "$root/home/runner"
  "$debian_root" enter "$root" setpriv --reuid=runner --regid=runner --init-groups \
    env -i HOME=/home/runner PATH=/usr/local/bin:/usr/bin:/bin LANG=C.UTF-8 \
    sh -c 'cd /home/runner/job && bash recipe.sh' 2>&1
}
expect() {  # expect NAME OUTPUT PATTERN...: every pattern is a line of OUTPUT
  local name=$1 out=$2; shift 2
  for pattern in "$@"; do
    if ! grep -qxE "$pattern" <<<"$out"; then
      echo "FAIL $name: no line matching '$pattern' in: $(tail -c 1500 <<<"$out")"; fail=1; return
    fi
  done
  echo "ok   $name"
}

out=$(run_recipe 'print("hello from CI")')
expect "the recipe installs, imports and runs a snippet as an ordinary user" "$out" \
  'ok' 'hello from CI' 'limits: (none|cgroup2) \(.+\)'
out=$(run_recipe 'while True: pass')
expect "the recipe reports a snippet that never ends as timed out" "$out" 'timed out'
rm -rf "$root"
exit $fail
