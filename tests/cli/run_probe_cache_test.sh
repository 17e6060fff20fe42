#!/usr/bin/env bash
# The fast one-shot path (issue #41): `mcp-sandbox run` keeps the namespace probes' pass and
# forks no probe child on the next run; a kept pass for another host key, or in a file others
# may write, is not trusted (probed again, and the file rewritten). The compiled seccomp program
# is kept the same way, and used. The probe child is the one
# process that calls unshare(CLONE_NEWUSER) (the sandbox itself gets its user namespace from
# clone3), so strace counts it. Needs root (the shared store), strace and the small image.
# Usage: run_probe_cache_test.sh /path/to/mcp-sandbox
set -u
bin=$1
# shellcheck source=tests/cli/lib.sh
source "$(dirname "$0")/lib.sh"
one_shot_store_setup "$bin" "sandboxes of the shared store"
cache=$SANDBOX_STATE_DIR/probe-cache/host-probe.$(id -u)

run_counting_probes() {  # prints "<output>|<probe children>"
  local out
  out=$(strace -f -qq -e trace=unshare -o "$work/strace" "$bin" run --image "$image" - \
    <<<'print(6 * 7)' 2>/dev/null)
  echo "$out|$(grep -c 'unshare(CLONE_NEWUSER)' "$work/strace")"
}

check "the first run probes" "42|1" "$(run_counting_probes)"
check "and keeps the pass, the user's own, mode 0600" "0 600" "$(stat -c '%u %a' "$cache")"
check "the next run forks no probe child" "42|0" "$(run_counting_probes)"
check "nor the one after" "42|0" "$(run_counting_probes)"

# Another host (here: another boot) does not match the kept key: probed again, key rewritten.
sed -i 's/^boot_id=.*/boot_id=another-boot/' "$cache"
check "a pass kept for another boot is probed again" "42|1" "$(run_counting_probes)"
check "and the key rewritten" 0 "$(grep -c another-boot "$cache")"

# A file another user could have written is not trusted.
chmod 0666 "$cache"
check "a pass in a file others may write is probed again" "42|1" "$(run_counting_probes)"
check "and replaced by one of mode 0600" 600 "$(stat -c '%a' "$cache")"
chown 65534 "$cache"
check "a pass in a file of another user is probed again" "42|1" "$(run_counting_probes)"
check "and replaced by the user's own" 0 "$(stat -c '%u' "$cache")"

# The compiled seccomp program is kept beside it (seccomp/program_cache.h), and used: a kept
# program that kills at once (one instruction, RET KILL_PROCESS, under this binary's key) stops
# the sandbox's init at its exec; the failed start forgets it, and the next run compiles again.
program=$SANDBOX_STATE_DIR/probe-cache/seccomp-program.$(id -u)
check "the seccomp program is kept, the user's own, mode 0600" "0 600" "$(stat -c '%u %a' "$program")"
check "with this binary and libseccomp in its key" 2 "$(grep -a -c -E '^(binary|libseccomp)=' "$program")"
{ grep -a -E '^(mcp-sandbox seccomp|binary|libseccomp)' "$program"; printf 'program=1\n\x06\x00\x00\x00\x00\x00\x00\x80'; } \
  >"$work/kill-program"
cp "$work/kill-program" "$program"
out=$("$bin" run --image "$image" - <<<'print(6 * 7)' 2>/dev/null)
check "a kept program is the one the sandbox gets" "1|" "$?|$out"
check "and, the start failed, it is forgotten" "" "$(ls "$program" 2>/dev/null)"
check "the next run compiles the policy again" "42|0" "$(run_counting_probes)"
check "and keeps it" 1 "$(grep -a -c '^program=' "$program")"
cp "$work/kill-program" "$program"
sed -i 's/^binary=.*/binary=another-build/' "$program"
check "a program kept for another binary is compiled again" "42|0" "$(run_counting_probes)"
check "and the key rewritten" 0 "$(grep -a -c another-build "$program")"
cp "$work/kill-program" "$program"
chmod 0666 "$program"
check "a program in a file others may write is compiled again" "42|0" "$(run_counting_probes)"
check "and replaced by one of mode 0600" 600 "$(stat -c '%a' "$program")"

# doctor always probes for real, whatever is kept.
strace -f -qq -e trace=unshare -o "$work/strace" "$bin" doctor >/dev/null 2>&1
check "doctor probes anyway" 1 "$(grep -c 'unshare(CLONE_NEWUSER)' "$work/strace")"
exit $fail
