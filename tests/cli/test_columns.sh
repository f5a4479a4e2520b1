#!/bin/bash
# Service Broker column selection (RECEIVE <column_specifier> ... INTO): --columns with
# --format tsv|csv|json and --header in mq-peek and mq-receive; the escaping of each format;
# usage errors (exit 2); --into FILE appends whole batches, synced before the receive commits,
# so that a failed append removes nothing; concurrent appenders never interleave rows.
. "$(dirname "$0")/lib.sh"

count() { mq-admin stat "$1" --json | jq -r .messages; }
G=00000000-0000-0000-0000-0000000000aa
expect_rc 0 mq-admin create q
# Messages with every Service Broker field, through import so that ids and times are fixed.
jq -c . >"$T/in.json" <<EOF
{"id":"{$G}\\\\1","priority":5,"body":"one","message_enqueue_time":"2026-01-02T03:04:05.678Z",
 "conversation_handle":"6F9619FF-8B86-D011-B42D-00C04FC964FF",
 "conversation_group_id":"11111111-2222-3333-4444-555555555555","message_sequence_number":7,
 "service_name":"//svc","service_contract_name":"//contract","message_type_name":"//t,1",
 "validation":"X","label":"L1"}
{"id":"{$G}\\\\2","body":"tab\there\nnew \\\\ line, \"quoted\"",
 "message_enqueue_time":"2026-01-02T03:04:06Z","label":""}
{"id":"{$G}\\\\3","body":"/wB6","body_encoding":"base64","message_enqueue_time":"2026-01-02T03:04:07Z"}
EOF
expect_rc 0 mq-admin import q <"$T/in.json"

# --- tsv -------------------------------------------------------------------------------------
STAR1=$'1\t5\t1\t11111111-2222-3333-4444-555555555555\t6f9619ff-8b86-d011-b42d-00c04fc964ff\t7\t//svc\t//contract\t//t,1\tX\tone\t{'$G$'}\\\\1\t2026-01-02T03:04:05.678Z\n'
STAR2=$'1\t3\t2\t\\N\t\\N\t0\t\\N\t\\N\t\\N\tN\ttab\\there\\nnew \\\\ line, "quoted"\t{'$G$'}\\\\2\t2026-01-02T03:04:06.000Z\n'
STAR3=$'1\t3\t3\t\\N\t\\N\t0\t\\N\t\\N\t\\N\tN\t\\xff\\x00z\t{'$G$'}\\\\3\t2026-01-02T03:04:07.000Z\n'
HEAD=$'status\tpriority\tqueuing_order\tconversation_group_id\tconversation_handle\tmessage_sequence_number\tservice_name\tservice_contract_name\tmessage_type_name\tvalidation\tmessage_body\tmessage_id\tmessage_enqueue_time\n'
# A peek lists messages in delivery order, priority then arrival, conversation messages
# included (mq-peek(1), issue 15): the conversation's (priority 5) first, as a receive takes it.
expect_rc 0 mq-peek q --all --columns '*'
expect_out "$STAR1$STAR2$STAR3"
# --format tsv alone is '*'; --columns alone is tsv; --header puts the names first.
expect_rc 0 mq-peek q --all --format tsv
expect_out "$STAR1$STAR2$STAR3"
expect_rc 0 mq-peek q --all --format tsv --columns '*' --header
expect_out "$HEAD$STAR1$STAR2$STAR3"
# Chosen columns in the given order, a repeat allowed as in SQL, mq's extras by name.
expect_rc 0 mq-peek q --all --columns status,priority,conversation_handle,message_sequence_number,message_type_name,message_body,priority
expect_out $'1\t5\t6f9619ff-8b86-d011-b42d-00c04fc964ff\t7\t//t,1\tone\t5\n1\t3\t\\N\t0\t\\N\ttab\\there\\nnew \\\\ line, "quoted"\t3\n1\t3\t\\N\t0\t\\N\t\\xff\\x00z\t3\n'
expect_rc 0 mq-peek q --all --columns lookup_id,queue,label,delivery_count --header
expect_out $'lookup_id\tqueue\tlabel\tdelivery_count\n1\tq\tL1\t0\n2\tq\t\t0\n3\tq\t\t0\n'
# alias=column, as SQL's column_alias = column.
expect_rc 0 mq-peek q --columns n=lookup_id,body=message_body --header
expect_out $'n\tbody\n1\tone\n'
expect_rc 0 mq-peek q --json --columns n=lookup_id,lookup_id
expect_out $'{"n":1,"lookup_id":1}\n'
# Every tsv row is one line with one TAB fewer than columns, whatever the body holds.
mq-peek q --all --columns '*' | awk -F'\t' 'NF != 13 { exit 1 }' || fail "a tsv row is not 13 fields"

# --- csv -------------------------------------------------------------------------------------
expect_rc 0 mq-peek q --all --format csv --columns message_type_name,conversation_group_id,message_body,label --header
expect_out $'message_type_name,conversation_group_id,message_body,label\r\n"//t,1",11111111-2222-3333-4444-555555555555,one,L1\r\n,,"tab\there\nnew \\ line, ""quoted""",""\r\n,,\\xff007a,""\r\n'
# Python's csv module reads back the same fields (RFC 4180).
if command -v python3 >/dev/null 2>&1; then
  mq-peek q --all --format csv >"$T/csv"
  python3 - "$T/csv" <<'PY' || fail "python's csv reader disagrees with --format csv"
import csv, sys
rows = list(csv.reader(open(sys.argv[1], newline='')))
assert len(rows) == 3 and all(len(r) == 13 for r in rows), rows
assert rows[1][10] == 'tab\there\nnew \\ line, "quoted"', rows[1][10]
assert rows[2][10] == '\\xff007a' and rows[0][8] == '//t,1'
PY
fi

# --- json ------------------------------------------------------------------------------------
expect_rc 0 mq-peek q --all --format json --columns message_body,status,conversation_handle,message_id,message_enqueue_time
expect_out '{"message_body":"one","status":1,"conversation_handle":"6f9619ff-8b86-d011-b42d-00c04fc964ff","message_id":"{'$G'}\\1","message_enqueue_time":"2026-01-02T03:04:05.678Z"}
{"message_body":"tab\there\nnew \\ line, \"quoted\"","status":1,"conversation_handle":null,"message_id":"{'$G'}\\2","message_enqueue_time":"2026-01-02T03:04:06.000Z"}
{"message_body":{"base64":"/wB6"},"status":1,"conversation_handle":null,"message_id":"{'$G'}\\3","message_enqueue_time":"2026-01-02T03:04:07.000Z"}
'
expect_rc 0 mq-peek q --json --columns '*'
jq -e 'keys_unsorted == ["status","priority","queuing_order","conversation_group_id","conversation_handle","message_sequence_number","service_name","service_contract_name","message_type_name","validation","message_body","message_id","message_enqueue_time"]' \
  "$T/out" >/dev/null || fail "--json --columns '*' keys: $(cat "$T/out")"

# --- usage errors: exit 2, one line, nothing touched ------------------------------------------
for bad in "--columns nope" "--columns status,,priority" "--columns status," "--columns service_id" \
  "--columns message_type_id" "--json --columns status,status" "--format xml" \
  "--header" "--json --header" "--columns status --template {body}" "--columns status -l" \
  "--format csv -0" "--columns x=*" "--columns =status" "--json --columns a=status,a=label"; do
  expect_rc 2 mq-peek q $bad
  expect_err_match 'E_INVALIDARG 0x80070057'
  expect_rc 2 mq-receive q $bad
  expect_err_match 'E_INVALIDARG 0x80070057'
done
expect_rc 2 mq-peek q --columns nope
expect_err_match "^mq-peek: unknown column 'nope' \(columns: \*, status, priority"
expect_rc 2 mq-receive q --columns service_contract_id
expect_err_match "column 'service_contract_id' has no source in mq .*use service_contract_name"
expect_rc 2 mq-receive q --columns status --exec cat
expect_rc 2 mq-receive q --into "$T/x" --exec cat
expect_rc 2 mq-receive q --format tsv --batch --all --exec cat
[ "$(count q)" = 3 ] || fail "a usage error touched the queue"
[ ! -e "$T/x" ] || fail "a usage error created the --into file"

# --- receive ---------------------------------------------------------------------------------
expect_rc 0 mq-receive q --columns lookup_id,message_body
expect_out $'1\tone\n'
[ "$(count q)" = 2 ] || fail "receive --columns did not remove the message"
# With --lease the token (message 2, returned by the nack below) goes to stderr, as for raw output.
expect_rc 0 mq-receive q --lease 1m --format csv --columns lookup_id
expect_out $'2\r\n'
grep -Eq '^[^ ]+$' "$T/err" || fail "--lease --format csv: no token on stderr: $(cat "$T/err")"
expect_rc 0 mq-admin nack "$(cat "$T/err")"

# --into: appends, prints nothing; the header only into an empty file.
F=$T/rows.tsv
expect_rc 0 mq-receive q --columns lookup_id,message_id --header --into "$F"
expect_out ''
expect_rc 0 mq-peek q --columns lookup_id,message_id --header --into "$F"
expect_out ''
printf 'lookup_id\tmessage_id\n2\t{%s}\\\\2\n3\t{%s}\\\\3\n' "$G" "$G" | cmp -s - "$F" ||
  fail "--into file: $(od -c "$F" | head)"
[ "$(count q)" = 1 ] || fail "receive --into did not remove exactly one message"
[ "$(stat -c %a "$F")" = "$(printf '%o' $((0666 & ~$(umask))))" ] ||
  fail "--into file mode $(stat -c %a "$F"), umask $(umask)"
expect_rc 0 mq-send q more
expect_rc 0 mq-receive q --all --format csv --columns message_body --into "$T/rows.csv"
printf '\\xff007a\r\nmore\r\n' | cmp -s - "$T/rows.csv" ||
  fail "--all --into csv: $(od -c "$T/rows.csv" | head)"
[ "$(count q)" = 0 ] || fail "--all --into left messages"

# A file that cannot be opened or written: the receive fails and removes nothing.
expect_rc 0 mq-send q keep
expect_rc 10 mq-receive q --columns '*' --into "$T/no/such/dir/f"
expect_err_match "^mq-receive: $T/no/such/dir/f: cannot open for appending: No such file"
touch "$T/plain"
expect_rc 10 mq-receive q --columns '*' --into "$T/plain/f"
if [ -w /dev/full ]; then
  expect_rc 6 mq-receive q --columns '*' --into /dev/full
  expect_err_match 'No space left on device.*nothing was removed'
  expect_rc 6 mq-receive q --json --into /dev/full
  expect_rc 6 mq-receive q --into /dev/full
fi
if [ "$(id -u)" != 0 ]; then
  mkdir "$T/ro" && chmod 555 "$T/ro"
  expect_rc 4 mq-receive q --columns '*' --into "$T/ro/f"
fi
expect_out ''
[ "$(count q)" = 1 ] || fail "a failed --into removed the message"
expect_rc 0 mq-admin create empty
expect_rc 1 mq-receive empty --columns '*' --into "$T/empty.tsv"
[ ! -s "$T/empty.tsv" ] || fail "an empty receive wrote to the --into file"

# The order of a receive with --into, and faults in it (strace): the message is Locked by a
# first commit, the rows are written and fdatasync'ed with no transaction open, and only then
# does the commit that removes the message write anything; a failed fdatasync leaves the file
# as it was and the message in the queue; a failed commit after the append says so.
if command -v strace >/dev/null 2>&1 && strace -o /dev/null -e trace=none true 2>/dev/null; then
  traced() {
    ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" strace -f -y -o "$T/trace" "$@"
  }
  F=$T/traced.tsv
  run traced -e trace=write,pwrite64,pwritev,writev,fdatasync,flock \
    mq-receive q --columns message_body --into "$F"
  [ "$RC" = 0 ] || fail "traced receive --into exited $RC: $(cat "$T/err")"
  [ "$(cat "$F")" = keep ] || fail "traced receive --into wrote '$(cat "$F")'"
  order=$(grep -Eo "(flock|write|fdatasync)\([0-9]+<$F>|(pwrite64|pwritev|writev|fdatasync)\([0-9]+<[^>]*data.mdb>" "$T/trace" |
    sed -E "s/\([0-9]+<$(printf '%s' "$F" | sed 's/[\/.]/\\&/g')>/(F)/; s/\([0-9]+<.*data.mdb>/(store)/" | uniq | tr '\n' ' ')
  case $order in
    *"(store) flock(F) write(F) fdatasync(F) flock(F) "*"(store)"*) ;;
    *) fail "receive --into: syscalls in the order '$order'" ;;
  esac
  expect_rc 0 mq-send q again
  printf 'before\n' >"$F"
  # fdatasync 1 is the store's (the lock), 2 the file's, 3 the store's (the removal).
  run traced -e trace=fdatasync -e inject=fdatasync:error=EIO:when=2 \
    mq-receive q --columns message_body --into "$F"
  [ "$RC" = 10 ] || fail "receive with a failing fdatasync of the file exited $RC"
  grep -q 'fdatasync failed' "$T/err" || fail "failing fdatasync: stderr $(cat "$T/err")"
  [ "$(cat "$F")" = before ] || fail "a failed append left '$(cat "$F")' in the file"
  [ "$(count q)" = 1 ] || fail "a failed append removed the message"
  # The commit that removes the message fails (the second fdatasync of data.mdb; the first is
  # the one that Locks it): exit 10, the message stays, the file has the row and a note says
  # that it may stand for a message not removed.
  run traced -P "$STORE/data.mdb" -e trace=fdatasync -e inject=fdatasync:error=EIO:when=2 \
    mq-receive q --columns message_body --into "$F"
  [ "$RC" = 10 ] || fail "receive whose store commit fails exited $RC, expected 10: $(cat "$T/err")"
  [ "$(count q)" = 1 ] || fail "a failed commit removed the message"
  [ "$(cat "$F")" = $'before\nagain' ] || fail "append before a failed commit: '$(cat "$F")'"
  grep -q "^mq-receive: $F: the last 1 row(s) appended here may stand for messages" "$T/err" ||
    fail "failed commit after --into: stderr $(cat "$T/err")"
  expect_rc 0 mq-receive q --all -0
else
  fail "strace is missing or cannot trace here (scripts/setup.sh installs it)"
fi

# --- concurrent appenders: whole rows only -------------------------------------------------
# Two stores (two LMDB writers, truly concurrent), two receivers each and a peeker, all
# appending 8 KiB rows (more than PIPE_BUF) to one file.
body=$(head -c 8192 /dev/zero | tr '\0' x)
for s in a b; do
  yes "$body" | head -n 300 | MQ_STORE=$T/$s mq-send --create -l c || fail "send to store $s"
done
F=$T/shared.tsv
for s in a b a b; do
  (while MQ_STORE=$T/$s mq-receive c -n 7 --columns message_id,message_body --into "$F" 2>/dev/null; do :; done) &
done
(for _ in 1 2 3 4 5; do MQ_STORE=$T/a mq-peek c -n 20 --columns message_id,message_body --into "$T/peeks" --header; done) &
wait
bad=$(grep -Evc "^\{[0-9a-f-]{36}\}\\\\\\\\[0-9]+	$body\$" "$F")
[ "$bad" = 0 ] || fail "$bad rows in the shared --into file are not whole"
[ "$(wc -l <"$F")" = 600 ] || fail "the shared --into file has $(wc -l <"$F") rows, not 600"
[ "$(cut -f1 "$F" | sort -u | wc -l)" = 600 ] || fail "a message was received twice or lost"
[ "$(head -n 1 "$T/peeks")" = $'message_id\tmessage_body' ] || fail "peek --into --header"
[ "$(grep -c message_id "$T/peeks")" = 1 ] || fail "the header went into the file more than once"
for s in a b; do
  [ "$(MQ_STORE=$T/$s count c)" = 0 ] || fail "store $s still has messages"
done

finish
