#!/bin/bash
# A duration needs a unit (issue 25, trap 1): `mq-receive q -w 5` waited 5 milliseconds, where
# every shell tool reads 5 as seconds. A number alone other than 0 is now a usage error that
# names both readings, exit 2, wherever a duration is read; nothing is sent, received or
# changed. 0, -1 and infinite keep their meaning, and a unit works as before.
. "$(dirname "$0")/lib.sh"

expect_rc 0 mq-admin init
expect_rc 0 mq-admin create q
expect_rc 0 mq-send q keep
hint() { # OPTION VALUE: the last run refused VALUE with the hint
  expect_err_match "invalid duration '$2': give a unit: $2s or $2ms"
}

expect_rc 2 mq-receive q -w 5;            hint -w 5
expect_rc 2 mq-receive q --wait=5;        hint --wait 5
expect_rc 2 mq-receive q --lease 30;      hint --lease 30
expect_rc 2 mq-receive q --retry-delay 3 --exec true; hint --retry-delay 3
expect_rc 2 mq-peek q -w 5;               hint -w 5
expect_rc 2 mq-watch q -t 5;              hint -t 5
expect_rc 2 mq-watch q --retry-delay 3 --exec true; hint --retry-delay 3
expect_rc 2 mq-send --ttbr 60 q x;        hint --ttbr 60
expect_rc 2 mq-send --ttrq 60 q x;        hint --ttrq 60
expect_rc 2 mq-send --delay 10 q x;       hint --delay 10
expect_rc 2 mq-admin create r --retry-delay 5;  hint --retry-delay 5
expect_rc 2 mq-admin create r --dedup-window 60; hint --dedup-window 60
expect_rc 2 mq-admin set q --retry-delay 5;     hint --retry-delay 5
expect_rc 2 mq-admin compact --wait 5;          hint --wait 5
expect_rc 2 mq-admin nack some-token --delay 5; hint --delay 5
expect_rc 2 mq-admin requeue q --all --ttbr 5;  hint --ttbr 5
expect_rc 0 mq-admin link add far --via "mq-admin --store $T/far accept"
expect_rc 2 mq-admin forward far --once --timeout 5; hint --timeout 5
expect_rc 2 mq-admin forward far --once --retry 5;   hint --retry 5

# Nothing was sent, received or created by the refused commands.
expect_rc 0 mq-admin stat q --json
grep -q '"messages":1[,}]' "$T/out" || fail "q changed: $(cat "$T/out")"
expect_rc 3 mq-admin stat r

# 0, -1 and infinite, and numbers with units, are taken.
expect_rc 1 mq-receive q --id '{00000000-0000-0000-0000-000000000001}\1' -w 0
expect_rc 0 mq-peek q -w -1
expect_out keep
expect_rc 0 mq-peek q -w infinite
expect_rc 0 mq-peek q -w 5s
expect_rc 0 mq-send --ttbr 60s --delay 0 q y
expect_rc 0 mq-admin create r --retry-delay 5ms --dedup-window 1m
expect_rc 0 mq-receive q -w 1.5s
expect_out keep
finish
