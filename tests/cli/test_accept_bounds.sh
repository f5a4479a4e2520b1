#!/bin/bash
# accept and import against a hostile peer (issue 23, defect 8), as a user meets them:
# - a sender that says nothing: accept ends the session after --idle-timeout (status 10)
#   instead of holding the store open for good;
# - an envelope of 2,000,000 elements (8 MB of <a/>, which took 438 MB): refused at once.
. "$(dirname "$0")/lib.sh"

expect_rc 0 mq-admin init
# A writer that stays silent for 3 s (then ends): accept gives up after 1 s.
run sh -c 'sleep 3 | exec mq-admin accept --idle-timeout 1s'
[ "$RC" = 10 ] || fail "accept of a silent sender exited $RC: $(cat "$T/err")"
grep -q "nothing from the sender for 1s: a stalled peer (accept --idle-timeout)" "$T/err" ||
  fail "accept's error: $(cat "$T/err")"
expect_rc 2 mq-admin accept --idle-timeout 0
expect_err_match "--idle-timeout 0 would end every session at once"
expect_rc 2 mq-admin accept --idle-timeout 5
expect_err_match "give a unit: 5s or 5ms"

python3 -c "
import sys
sys.stdout.write('<se:Envelope xmlns:se=\"http://schemas.xmlsoap.org/soap/envelope/\"><se:Header>' + '<a/>'*2000000 + '</se:Header><se:Body/></se:Envelope>')" >"$T/big.xml"
expect_rc 2 mq-admin import --create --format srmp q <"$T/big.xml"
expect_err_match "document 1: <se:Envelope>: more than 4096 elements: no SRMP envelope has that many"
finish
