#!/bin/bash
# mq-receive --exec, the edges: the body reaches CMD intact (3 MiB, binary) and a CMD that
# does not read it still commits; MQ_* variables describe the message and cannot be spoofed
# from the caller's environment; --batch -0 separates bodies with NUL; and a CMD that cannot
# be run at all is a usage error (exit 2) that changes nothing: no delivery or abort is
# counted, so a typo cannot poison a queue.
. "$(dirname "$0")/lib.sh"

state() { mq-peek q --all --template '{body}:{delivery_count}:{abort_count} ' 2>/dev/null; }
expect_rc 0 mq-admin create q --max-retries 2

# --- the body, intact, on stdin -------------------------------------------------------------------
head -c 3145728 /dev/urandom >"$T/big"
expect_rc 0 mq-send -f "$T/big" q
expect_rc 0 mq-receive q --exec sh -c 'cat >"$0"' "$T/got"
cmp -s "$T/big" "$T/got" || fail "CMD got $(wc -c <"$T/got") bytes, not the 3 MiB body sent"
expect_rc 1 mq-peek q
# A CMD that never reads its (large) stdin and exits 0 commits.
expect_rc 0 mq-send -f "$T/big" q
expect_rc 0 timeout 20 mq-receive q --exec true
expect_out ''
expect_rc 1 mq-peek q

# --- MQ_* variables ---------------------------------------------------------------------------------
expect_rc 0 mq-send -p 6 -L lbl --app 42 q 'x y'
id=$(mq-peek q --json | jq -r .id)
lk=$(mq-peek q --json | jq -r .lookup_id)
expect_rc 0 env MQ_DELIVERY_COUNT=99 MQ_ID=spoofed MQ_EXTRA=1 MQ_STORE="$T/elsewhere" \
  mq-receive -s "$STORE" q --exec sh -c 'printf "%s|" "$MQ_QUEUE" "$MQ_ID" "$MQ_LOOKUP_ID" "$MQ_PRIORITY" "$MQ_LABEL" \
    "$MQ_APP_SPECIFIC" "$MQ_DELIVERY_COUNT" "$MQ_ABORT_COUNT" "$MQ_COUNT" "${MQ_EXTRA-unset}" "$MQ_STORE" >"$0"' "$T/env"
[ "$(cat "$T/env")" = "q|$id|$lk|6|lbl|42|1|0|1|unset|$STORE|" ] ||
  fail "CMD saw '$(cat "$T/env")', expected 'q|$id|$lk|6|lbl|42|1|0|1|unset|$STORE|'"

# --- --batch -0 -----------------------------------------------------------------------------------------
printf 'a\nb\n' | mq-send -l q
printf 'c d' | mq-send q
expect_rc 0 mq-receive q --all --batch -0 --exec sh -c 'cat >"$0"; echo "$MQ_COUNT" >"$0.n"' "$T/batch"
[ "$(od -An -c "$T/batch" | tr -s ' ' | tr -d '\n')" = ' a \0 b \0 c d \0' ] ||
  fail "--batch -0 fed $(od -An -c "$T/batch")"
[ "$(cat "$T/batch.n")" = 3 ] || fail "--batch MQ_COUNT $(cat "$T/batch.n")"

# --- a command that cannot be run: exit 2, nothing changes ------------------------------------------------
expect_rc 0 mq-send q keep
expect_rc 2 mq-receive q --exec "$T/no-such-command"
expect_err_match "^mq-receive: .*$T/no-such-command.*\(E_INVALIDARG 0x80070057\)$"
[ "$(state)" = 'keep:0:0 ' ] || fail "a command that could not run changed the message: $(state)"
expect_rc 2 mq-receive q --exec no-such-command-in-path
expect_rc 2 mq-receive q --exec no-such-command-in-path
[ "$(state)" = 'keep:0:0 ' ] || fail "three runs of a missing command (max-retries 2) left: '$(state)'"
expect_rc 0 mq-admin stat 'q;poison' --json
[ "$(jq .messages "$T/out")" = 0 ] || fail "a missing command poisoned the message"
expect_rc 0 mq-admin locks
expect_out ''
expect_rc 0 mq-receive q --exec true
expect_rc 0 mq-admin check
expect_out ''
finish
