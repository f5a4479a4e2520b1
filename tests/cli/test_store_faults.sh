#!/bin/bash
# Issue 12: fault injection. On copies of a store, data.mdb is truncated to random sizes, and
# random pages are zeroed or filled with random bytes; then the common operations of every
# tool run on it. Every exit is 0, 1, 3, 6 or 10, never a signal (or a hang); whenever a
# tool reported damage (10), check reports it too; nothing outside the store changes.
. "$(dirname "$0")/lib.sh"

TRIALS=${MQ_FAULT_TRIALS:-100}
S=$T/orig
mq-admin -s "$S" init >/dev/null && mq-admin -s "$S" create q >/dev/null || fail "init"
pad=$(printf 'y%.0s' $(seq 180))
for i in $(seq 2000); do echo "$i $pad"; done | mq-send -s "$S" -l q
mq-send -s "$S" --create other --conversation new hello >/dev/null
mq-admin -s "$S" create j --journal >/dev/null
seq 50 | mq-send -s "$S" -l j && mq-receive -s "$S" j -n 20 >/dev/null
expect_rc 0 mq-admin -s "$S" check
pagesize=4096
pages=$(( $(stat -c %s "$S/data.mdb") / pagesize ))
printf 'outside\n' >"$T/outside"
out0=$(md5sum <"$T/outside")

RANDOM=42
bad=0
trial() {  # trial KIND N
  local kind=$1 n=$2 C=$T/c rc damage=0 cmd checkrc
  rm -rf "$C"
  cp -a "$S" "$C"
  case $kind in
    truncate) truncate -s $(( (RANDOM * 32768 + RANDOM) % (pages * pagesize) )) "$C/data.mdb" ;;
    zero) dd if=/dev/zero of="$C/data.mdb" bs=$pagesize seek=$(( RANDOM % pages )) count=1 conv=notrunc status=none ;;
    random) head -c $pagesize /dev/urandom | dd of="$C/data.mdb" bs=$pagesize seek=$(( RANDOM % pages )) count=1 conv=notrunc status=none ;;
  esac
  for cmd in "mq-peek q --all -l" "mq-peek q --lookup-id 1500 --next" "mq-admin stat" "mq-admin list" \
             "mq-watch q -t 0" "mq-receive q -n 5 -l" "mq-send q fresh" "mq-receive other" \
             "mq-admin export q" "mq-admin sweep"; do
    timeout -s KILL 20 $cmd -s "$C" >/dev/null 2>"$T/err"
    rc=$?
    case $rc in
      0 | 1 | 3 | 6) ;;
      10) damage=1 ;;
      *) fail "$kind trial $n: '$cmd' exited $rc: $(head -c 300 "$T/err")"; bad=1 ;;
    esac
  done
  timeout -s KILL 60 mq-admin -s "$C" check >/dev/null 2>"$T/err"
  checkrc=$?
  case $checkrc in
    0) [ "$damage" = 0 ] || { fail "$kind trial $n: a tool reported damage, check found none"; bad=1; } ;;
    10) ;;
    *) fail "$kind trial $n: check exited $checkrc: $(head -c 300 "$T/err")"; bad=1 ;;
  esac
}
for kind in truncate zero random; do
  for ((n = 1; n <= TRIALS; n++)); do
    trial "$kind" "$n"
    [ "$bad" = 0 ] || break
  done
done
[ "$(md5sum <"$T/outside")" = "$out0" ] || fail "a file outside the store changed"

finish
