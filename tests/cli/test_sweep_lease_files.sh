# A receiver killed after its lease ended but before it removed its lock file leaves the file;
# mq-admin sweep removes it, and leaves the files of live leases alone.
. "$(dirname "$0")/lib.sh"
command -v strace >/dev/null || skip "strace not installed"

expect_rc 0 mq-admin create q
expect_rc 0 mq-send q a
expect_rc 0 mq-send q b
# Kill mq-receive at its unlink of the lease file: the commit is done, the file stays.
ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
  strace -o /dev/null -e trace=unlink -e inject=unlink:signal=KILL mq-receive q --exec true \
  >/dev/null 2>&1
[ "$(ls "$STORE/locks" | grep -c '^lease\.')" = 1 ] || fail "no orphan lease file to sweep"
# A live lease: its file must survive the sweep.
timeout 20 mq-receive q --exec sleep 5 &
holder=$!
for _ in $(seq 100); do
  [ "$(ls "$STORE/locks" | grep -c '^lease\.')" = 2 ] && break
  sleep 0.05
done
expect_rc 0 mq-admin sweep
[ "$(ls "$STORE/locks" | grep -c '^lease\.')" = 1 ] || fail "sweep left $(ls "$STORE/locks")"
expect_rc 0 mq-admin locks
grep -q 'alive' "$T/out" || fail "the live lease is gone: $(cat "$T/out")"
kill "$holder" 2>/dev/null
wait "$holder" 2>/dev/null
expect_rc 0 mq-admin check
finish
