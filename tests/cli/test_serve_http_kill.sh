#!/bin/bash
# mq-admin serve, killed: a stream of 5000 transactional messages POSTed as MSMQ would (each
# sent again until it is answered, now and then one sent again after its answer, as after a
# lost stream receipt) while serve is killed with SIGKILL five times and started again on the
# same port. Every ordinal is stored once and in order, and the store checks clean.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/bg.sh"
command -v curl >/dev/null || skip "curl is not installed"

N=5000
# The documents: a transactional send in another store, exported as SRMP (one <Stream>).
MQ_STORE=$T/src mq-admin create tq --transactional || fail "no source queue"
seq "$N" | MQ_STORE=$T/src mq-send -l --tx tq || fail "the source send failed"
MQ_STORE=$T/src mq-admin export tq --format srmp >"$T/docs" 2>/dev/null || fail "export failed"
[ "$(grep -c '^POST ' "$T/docs")" = "$N" ] || fail "the export holds $(grep -c '^POST ' "$T/docs") documents"

expect_rc 0 mq-admin create tq --transactional
PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
serve() {
  start mq-admin serve --http "127.0.0.1:$PORT"
  SERVE=$PID
  until_true 10 grep -qs "listening on" "$T/bg.$SERVE.err" || fail "serve did not start"
}
serve
# The sender: each document until it is answered 200, on a kept-alive connection made again
# after each failure; one in twenty sent again once answered (a replay).
cat >"$T/sender.py" <<'EOF'
import http.client, random, sys, time
data = open(sys.argv[1], "rb").read()
docs = [b"POST " + d for d in data.split(b"POST ")[1:]]
port = int(sys.argv[2])
conn = None
def post(doc):
    global conn
    head, _, body = doc.partition(b"\r\n\r\n")
    ctype = [l.split(b": ", 1)[1] for l in head.split(b"\r\n") if l.lower().startswith(b"content-type:")][0]
    path = head.split(b" ")[1].decode()
    while True:
        try:
            if conn is None:
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            conn.request("POST", path, body, {"Content-Type": ctype.decode(), "SOAPAction": '"MSMQMessage"'})
            r = conn.getresponse()
            r.read()
            if r.status == 200:
                return
            print("status", r.status, flush=True)
        except (OSError, http.client.HTTPException):
            pass
        conn = None
        time.sleep(0.02)
random.seed(7)
for i, d in enumerate(docs):
    post(d)
    if i and random.random() < 0.05:
        post(docs[i - 1])
print("sent", len(docs), flush=True)
EOF
BG_TIMEOUT=120 start python3 "$T/sender.py" "$T/docs" "$PORT"
SENDER=$PID
kills=0
for k in 1 2 3 4 5; do
  sleep "0.$((RANDOM % 15 + 5))"
  [ -s "$T/bg.$SENDER.out" ] || kills=$((kills + 1))  # while it still sends
  kill -KILL "$(tool_pid "$SERVE")" 2>/dev/null
  wait "$SERVE" 2>/dev/null
  serve
done
[ "$kills" -ge 3 ] || fail "only $kills kills came while the stream was sent"
wait "$SENDER" || fail "the sender failed: $(cat "$T/bg.$SENDER.out" "$T/bg.$SENDER.err")"
grep -q "^sent $N" "$T/bg.$SENDER.out" || fail "the sender did not finish: $(cat "$T/bg.$SENDER.out")"
grep -q '^status' "$T/bg.$SENDER.out" && fail "an answer other than 200: $(grep '^status' "$T/bg.$SENDER.out" | head -3)"
kill -TERM "$(tool_pid "$SERVE")"
wait "$SERVE"
mq-receive tq --all -l >"$T/got" || fail "nothing to receive"
seq "$N" | cmp -s - "$T/got" ||
  fail "not each of 1..$N once and in order: $(wc -l <"$T/got") messages, first difference: $(seq "$N" | cmp - "$T/got" 2>&1 | head -1)"
expect_rc 0 mq-admin check
finish
