#!/bin/bash
# A crafted SRMP document costs linear time, and no parse runs while the write lock is held
# (issue 23, defect 3): 3.2 MB of boundary look-alikes with no line break ("--Bx" x 819,200)
# took 57 s in the MIME reader, inside import's write transaction, and a concurrent mq-send
# waited as long. Now the document is refused at once, decoded before the transaction.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/bg.sh"

expect_rc 0 mq-admin init
expect_rc 0 mq-admin create o
python3 -c "import sys;sys.stdout.buffer.write(b'Content-Type: multipart/related; boundary=\"B\"\r\n\r\n--B\r\nContent-Type: text/xml\r\n\r\n<r/>'+b'--Bx'*819200)" >"$T/m"
BG_TIMEOUT=30 start sh -c 'exec mq-admin import --create --format srmp q <"$1"' sh "$T/m"
expect_rc 0 timeout -s KILL 30 mq-send o x
expect_bg 2 "$PID"
expect_err_match "^mq-admin: stdin: document 1: <se:Envelope>: not well-formed XML"
expect_rc 3 mq-admin stat q
# Good documents still import: the export of o, imported again as new messages.
expect_rc 0 mq-admin export o --format srmp
cp "$T/out" "$T/doc"
expect_rc 0 timeout -s KILL 30 mq-admin import --format srmp --new-ids o <"$T/doc"
expect_rc 0 mq-peek o --all -l
expect_out $'x\nx\n'
finish
