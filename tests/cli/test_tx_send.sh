#!/bin/bash
# mq-send --tx: one transaction per invocation. A transactional queue refuses other sends
# (exit 5, nothing stored); --tx -l of 1000 lines (and of 100,000, more than one -l batch)
# becomes visible all at once: a concurrent observer never sees a partial count; Eod First
# only on the first message, Eod Last only on the last; one xact_id per send; sequence
# numbers consecutive across sends; a send that fails half-way stores nothing.
. "$(dirname "$0")/lib.sh"
BG=()
_prev_exit=$(trap -p EXIT); _prev_exit=${_prev_exit#trap -- \'}; _prev_exit=${_prev_exit%\' EXIT}
trap 'for p in "${BG[@]}"; do ours "$p" && kill -9 "$p" 2>/dev/null; done; '"$_prev_exit" EXIT

count() { mq-admin stat "$1" --json | grep -o '"messages":[0-9]*' | cut -d: -f2; }

# --- a transactional queue refuses non-transactional sends ---------------------------------------
expect_rc 0 mq-admin create t --transactional
expect_rc 5 mq-send t one
expect_out ''
expect_err_match '^mq-send: t: .*\(MQ_ERROR_TRANSACTION_USAGE 0xC00E0050\)$'
printf 'a\nb\n' >"$T/two"
expect_rc 5 mq-send -l t <"$T/two"
expect_rc 5 mq-send -f "$T/two" t
[ "$(count t)" = 0 ] || fail "a refused send stored $(count t) messages"
expect_rc 0 mq-send --tx t one
expect_rc 0 mq-peek t --json
[ "$(jq -c '[.body, .eod_first, .eod_last, .tx_sequence_number, .tx_previous_sequence_number]' "$T/out")" = '["one",true,true,1,0]' ] ||
  fail "single --tx send: $(jq -c '[.body, .eod_first, .eod_last, .tx_sequence_number, .tx_previous_sequence_number]' "$T/out")"
[[ $(jq -r .xact_id "$T/out") =~ ^[0-9a-f]{40}$ ]] || fail "xact_id of a --tx send: $(jq -r .xact_id "$T/out")"
expect_rc 0 mq-receive t -w 0
expect_out 'one'

# --- 1000 lines: all at once, seen by concurrent observers ----------------------------------------
for i in $(seq 1000); do printf 'line-%04d-%0990d\n' "$i" "$i"; done >"$T/lines1000"
expect_rc 0 mq-admin create q --transactional
# observer: stat counts and peek counts, as fast as it can, until told to stop.
observe() {
  local q=$1 out=$2
  while [ ! -e "$T/stop" ]; do
    printf 'stat %s\n' "$(count "$q")"
    [ "${3:-}" = peek ] && printf 'peek %s\n' "$(mq-peek "$q" --all -l 2>/dev/null | wc -l)"
  done >"$out"
}
rm -f "$T/stop"
observe q "$T/seen1" peek &
BG+=($!)
obs=$!
# The send starts once the observer has seen the empty queue, and it stops once it has seen
# the whole send, not after fixed sleeps (an observation of two tools can take most of a
# second under the sanitizers on a loaded machine).
until_true 20 grep -q ' 0$' "$T/seen1"
# The input arrives in two halves, 0.3 s apart: the send is under way for a while.
{ head -n 500 "$T/lines1000"; sleep 0.3; tail -n +501 "$T/lines1000"; } | mq-send --tx -l q >"$T/out" 2>"$T/err"
rc=$?
[ $rc = 0 ] || fail "mq-send --tx -l of 1000 lines exited $rc: $(cat "$T/err")"
until_true 20 grep -q ' 1000$' "$T/seen1"
touch "$T/stop"
timeout 10 tail --pid="$obs" -f /dev/null
bad=$(grep -Ev '^(stat|peek) (0|1000)$' "$T/seen1" | sort | uniq -c | head -5)
[ -z "$bad" ] || fail "an observer saw a partial --tx send: $bad"
grep -q ' 0$' "$T/seen1" && grep -q ' 1000$' "$T/seen1" ||
  fail "the observer did not run before and after the send: $(sort "$T/seen1" | uniq -c | tr '\n' ' ')"
# Bodies intact and in order.
mq-peek q --all -l >"$T/got"
cmp -s "$T/lines1000" "$T/got" || fail "the 1000 bodies differ from the input"
# Eod First only on the first, Eod Last only on the last, one xact id, consecutive numbers.
mq-peek q --all --json >"$T/json1"
jq -s -c '[ (map(.eod_first) | indices(true)), (map(.eod_last) | indices(true)),
            (map(.xact_id) | unique | length), (map(.xact_id) | .[0] | test("^[0-9a-f]{40}$")),
            (.[0].tx_sequence_number as $f | [range(0; length)] == map(.tx_sequence_number - $f)),
            (map(.tx_sequence_number - .tx_previous_sequence_number) | unique) ]' "$T/json1" >"$T/summary"
[ "$(cat "$T/summary")" = '[[0],[999],1,true,true,[1]]' ] ||
  fail "1000-line --tx send: [eod_first at, eod_last at, xact ids, xact id hex, numbers consecutive, number - previous]: $(cat "$T/summary")"

# A second --tx send continues the sequence; same sequence id, another xact id.
printf 'x1\nx2\nx3\n' | mq-send --tx -l q
mq-peek q --all --json >"$T/json2"
first_seq=$(jq -s '.[0].tx_sequence_number' "$T/json1")
jq -s -c --argjson f "$first_seq" '[ (.[1000:] | map(.body)), (.[1000:] | map(.tx_sequence_number - $f)),
            (.[1000:] | map(.tx_previous_sequence_number - $f)),
            (.[1000:] | map([.eod_first, .eod_last])),
            (map(.xact_id) | unique | length) ]' "$T/json2" >"$T/summary"
[ "$(cat "$T/summary")" = '[["x1","x2","x3"],[1000,1001,1002],[999,1000,1001],[[true,false],[false,false],[false,true]],2]' ] ||
  fail "second --tx send: [bodies, numbers, previous numbers, eod, xact ids]: $(cat "$T/summary")"
# tx_sequence_id (64-bit: compared as text, jq would round it) is one for the queue.
ids=$(grep -o '"tx_sequence_id":[0-9]*' "$T/json2" | sort -u)
[ "$(printf '%s\n' "$ids" | wc -l)" = 1 ] && [ "$ids" != '"tx_sequence_id":0' ] ||
  fail "tx_sequence_id values: $ids"
# Messages sent without --tx carry none of it.
expect_rc 0 mq-admin create p
expect_rc 0 mq-send p plain
expect_rc 0 mq-peek p --last --json
[ "$(jq -c '[.eod_first, .eod_last, .xact_id, .tx_sequence_number]' "$T/out")" = '[false,false,null,0]' ] ||
  fail "a plain send: $(jq -c '[.eod_first, .eod_last, .xact_id, .tx_sequence_number]' "$T/out")"

# --- 100,000 lines: more than one -l batch, still one transaction ----------------------------------
expect_rc 0 mq-admin create big --transactional
rm -f "$T/stop"
observe big "$T/seen2" &
BG+=($!)
obs=$!
until_true 20 grep -q '^stat 0$' "$T/seen2"
seq 100000 | mq-send --tx -l big
rc=$?
[ $rc = 0 ] || fail "mq-send --tx -l of 100000 lines exited $rc"
until_true 20 grep -q '^stat 100000$' "$T/seen2"
touch "$T/stop"
timeout 10 tail --pid="$obs" -f /dev/null
bad=$(grep -Ev '^stat (0|100000)$' "$T/seen2" | sort | uniq -c | head -5)
[ -z "$bad" ] || fail "an observer saw a partial 100000-line --tx send: $bad"
grep -q '^stat 0$' "$T/seen2" && grep -q '^stat 100000$' "$T/seen2" ||
  fail "the observer did not run before and after the 100000-line send: $(sort "$T/seen2" | uniq -c | tr '\n' ' ')"
mq-peek big --first --json | jq -c '[.body, .eod_first, .eod_last]' >"$T/a"
mq-peek big --last --json | jq -c '[.body, .eod_first, .eod_last]' >>"$T/a"
[ "$(tr -d '\n' <"$T/a")" = '["1",true,false]["100000",false,true]' ] || fail "100000-line send ends: $(cat "$T/a")"

# --- a send that fails half-way stores nothing ------------------------------------------------------
expect_rc 0 mq-admin create small --max-message-size 100
{ seq 499; printf '%0200d\n' 0; seq 10; } >"$T/bad"
expect_rc 6 mq-send --tx -l small <"$T/bad"
expect_out ''
[ "$(count small)" = 0 ] || fail "a failed --tx send stored $(count small) messages"

expect_rc 0 mq-admin check
expect_out ''
finish
