#!/bin/bash
# HTTP links ([MC-MQSRM], the sending half): mq-admin link add --url, mq-send's HTTP format
# names, and what mq-admin forward posts, captured by a test HTTP server and checked element
# by element against the spec's rules; stream receipts posted to this store's serve end the
# transactional messages; a 400 dead-letters; two stores over HTTP on 127.0.0.1.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/bg.sh"

command -v curl >/dev/null || skip "curl is not installed"
expect_rc 0 mq-admin init
FIX=$MQ_SRC/tests/fixtures/srmp

# serve_on STORE: a serve of STORE on a free port: $PORT, its job in $SERVE.
serve_on() {
  start mq-admin --store "$1" serve --http 127.0.0.1:0
  SERVE=$PID
  PORT=
  until_true 10 grep -qs "listening on" "$T/bg.$SERVE.err" || fail "serve did not start"
  PORT=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$T/bg.$SERVE.err")
}

# The links' settings.
expect_rc 2 mq-admin link add w --url ftp://host/msmq
grep -q "http" "$T/err" || fail "a bad --url says what a URL is: $(cat "$T/err")"
expect_rc 2 mq-admin link add w --url http://host/other
expect_rc 2 mq-admin link add w --url http://host/msmq --via cat
expect_rc 2 mq-admin link add w --via cat --receipts-url http://me/msmq/private\$/order_queue\$
expect_rc 2 mq-admin link add w
expect_rc 0 mq-admin link add w --url HTTP://Win.Example:80/MSMQ/ --receipts-url 'http://me/msmq/private$/order_queue$'
expect_rc 0 mq-admin link stat w --json
[ "$(jq -r .url "$T/out")" = "http://win.example/msmq" ] || fail "the url is not kept in one form: $(cat "$T/out")"
[ "$(jq -r .via "$T/out")" = null ] || fail "an HTTP link has a via"
expect_rc 5 mq-admin link add w2 --url http://win.example/msmq  # one link per machine
grep -q "link w has that --url" "$T/err" || fail "a second link to a machine: $(cat "$T/err")"

# Format names: through the link with that url; none is a clear error.
expect_rc 0 mq-send 'DIRECT=HTTP://WIN.example/msmq/private$/orders' a
expect_rc 0 mq-send 'FormatName:DIRECT=http://win.example:80/MSMQ/Private$/orders' b
expect_rc 0 mq-send w:orders c
[ "$(mq-admin stat 'out;w' --json | jq -r .messages)" = 3 ] || fail "the HTTP format names did not reach out;w"
expect_rc 3 mq-send 'DIRECT=HTTP://other.example:8080/msmq/private$/orders' d
grep -q "no link reaches http://other.example:8080/msmq: add one with mq-admin link add NAME --url http://other.example:8080/msmq" "$T/err" ||
  fail "no link for a format name: $(cat "$T/err")"
expect_rc 2 mq-send 'DIRECT=HTTP://win.example/msmq/orders' d  # public: not supported
grep -q "private queues only" "$T/err" || fail "a public queue's format name: $(cat "$T/err")"
expect_rc 0 mq-admin link delete w --force

# A capture server that keeps each POST whole (its headers too), answering 200, or 400 for
# the queue "refused".
mkdir "$T/posts"
start python3 -c '
import http.server, os, sys
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    n = 0
    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        H.n += 1
        with open(os.path.join(sys.argv[1], "%03d" % H.n), "wb") as f:
            f.write(self.path.encode() + b"\n" + "".join("%s: %s\n" % kv for kv in self.headers.items()).encode() + b"\n" + body)
        code = 400 if self.path.endswith("/refused") else 200
        text = b"no such queue\n" if code == 400 else b""
        self.send_response(code)
        self.send_header("Content-Length", str(len(text)))
        self.end_headers()
        self.wfile.write(text)
    def log_message(self, *a):
        pass
s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
print(s.server_address[1], flush=True)
s.serve_forever()' "$T/posts"
CAPTURE=$PID
until_true 10 test -s "$T/bg.$CAPTURE.out" || fail "the capture server did not start"
CPORT=$(cat "$T/bg.$CAPTURE.out")

serve_on "$STORE"
HERE=$PORT
expect_rc 0 mq-admin link add cap --url "http://127.0.0.1:$CPORT/msmq" \
  --receipts-url "http://127.0.0.1:$HERE/msmq/private\$/order_queue\$"
expect_rc 0 mq-admin create replies
expect_rc 0 mq-send --label plain --response-queue replies --ack full-reach-queue --admin-queue replies "DIRECT=http://127.0.0.1:$CPORT/msmq/private\$/orders" one
expect_rc 0 mq-send --label refused --deadletter cap:refused two
for i in 1 2 3; do expect_rc 0 mq-send --tx --label "tx$i" "cap:orders" "t$i"; done
# forward posts them; the transactional ones wait for a receipt (the capture server sends none).
start mq-admin forward cap --follow --timeout 60s
FWD=$PID
until_true 10 test -e "$T/posts/005" || fail "forward did not post the 5 messages"
sleep 0.3
[ -e "$T/posts/006" ] && fail "a message was posted twice"

# Element by element ([MC-MQSRM] 2.1, 2.2, 3.1.7): each its own POST to the queue's path.
python3 - "$T/posts" "$CPORT" "$HERE" <<'EOF' || fail "what forward posted breaks the spec's rules"
import os, re, sys
d, cport, here = sys.argv[1:]
bad = []
def check(cond, what):
    if not cond:
        bad.append(what)
posts = {}
guid = None
for name in sorted(os.listdir(d)):
    raw = open(os.path.join(d, name), "rb").read().decode("utf-8", "replace")
    path, rest = raw.split("\n", 1)
    head, _, body = rest.partition("\n\n")
    label = re.search(r"<action>MSMQ:([^<]*)</action>", body).group(1)
    posts[label] = (path, head, body)
    guid = guid or re.search(r"<SourceQmGuid>([0-9a-f-]{36})</SourceQmGuid>", body).group(1)
check(set(posts) == {"plain", "refused", "tx1", "tx2", "tx3"}, "labels %s" % sorted(posts))
for label, (path, head, body) in posts.items():
    q = "refused" if label == "refused" else "orders"
    check(path == "/msmq/private$/" + q, "%s: path %s" % (label, path))
    h = head.lower()
    check('soapaction: "msmqmessage"' in h, label + ": SOAPAction")
    check(("host: 127.0.0.1:%s" % cport) in h, label + ": Host")
    check(re.search(r"content-type: multipart/related; boundary=\"[^\"]+\"; type=text/xml", h) is not None, label + ": Content-Type")
    check("<to>http://127.0.0.1:%s/msmq/private$/%s</to>" % (cport, q) in body, label + ": <to> is the full URL")
    check(re.search(r"<sentAt>\d{8}T\d{6}</sentAt>", body) is not None, label + ": <sentAt> yyyymmddThhmmss")
    check(re.search(r"<expiresAt>\d{8}T\d{6}</expiresAt>", body) is not None, label + ": <expiresAt>")
    check("<DestinationMqf>DIRECT=http://127.0.0.1:%s/msmq/private$/%s</DestinationMqf>" % (cport, q) in body, label + ": DestinationMqf")
    check(re.search(r"<id>uuid:\d+@[0-9a-f-]{36}</id>", body) is not None, label + ": <id> uuid:N@GUID")
    tx = label.startswith("tx")
    check(("<Stream" in body) == tx, label + ": <Stream> only on transactional messages")
plain = posts["plain"][2]
mine = "http://127.0.0.1:%s/msmq/private$/replies" % here
check("<rev><via>%s</via></rev>" % mine in plain, "plain: <rev><via> is this store's URL")
check("<ResponseMqf>DIRECT=%s</ResponseMqf>" % mine in plain, "plain: ResponseMqf")
check("<AdminMqf>DIRECT=%s</AdminMqf>" % mine in plain, "plain: AdminMqf")
check("<deliveryReceiptRequest><sendTo>%s</sendTo></deliveryReceiptRequest>" % mine in plain, "plain: deliveryReceiptRequest")
# The link's stream: uid:THIS-STORE\QUEUE-ID of out;cap.
stream = re.search(r"<streamId>([^<]*)</streamId>", posts["tx1"][2]).group(1)
check(re.fullmatch(r"uid:" + guid + r"\\\d+", stream) is not None, "streamId " + stream)
ords = []
for i in (1, 2, 3):
    b = posts["tx%d" % i][2]
    m = re.search(r"<Stream[^>]*><streamId>([^<]*)</streamId><current>(\d+)</current>(<previous>(\d+)</previous>)?", b)
    check(m is not None and m.group(1) == stream, "tx%d: streamId %s" % (i, m and m.group(1)))
    if m:
        ords.append((int(m.group(2)), m.group(4)))
    check("<streamReceiptRequest/>" in b, "tx%d: streamReceiptRequest" % i)
    check(("<start><sendReceiptsTo>http://127.0.0.1:%s/msmq/private$/order_queue$</sendReceiptsTo></start>" % here in b) == (i == 1), "tx%d: <start> on the first only" % i)
# Ordinals: their lookup ids in out;cap (3, 4, 5: two plain messages before them); the first
# says it follows 0, the others the one before.
check(ords == [(3, "0"), (4, "3"), (5, "4")], "ordinals %s" % ords)
if bad:
    print("\n".join(bad))
    sys.exit(1)
EOF

# The plain message ended at its 200 (ACK_REACH_QUEUE in replies), the refused one at its
# 400 (dead-lettered); the transactional ones wait in out;cap for a stream receipt.
until_true 10 sh -c '[ "$(mq-admin stat "out;cap" --json | jq -r .messages)" = 3 ]' ||
  fail "out;cap does not hold just the 3 transactional messages"
[ "$(mq-admin stat 'system;deadletter' --json | jq -r .messages)" = 1 ] || fail "the refused message is not dead-lettered"
expect_rc 0 mq-receive --json replies
[ "$(jq -r .class "$T/out")" = ack_reach_queue ] || fail "no ACK_REACH_QUEUE for the plain message: $(cat "$T/out")"
STREAM=$(grep -ah -o '<streamId>[^<]*</streamId>' "$T"/posts/* | head -1 | sed 's/<[^>]*>//g')
# A stream receipt (sample 4.4's, for this stream, covering ordinal LAST) posted to serve.
receipt() {
  python3 -c 'import re, sys; d = open(sys.argv[1]).read(); d = re.sub(r"<streamId>[^<]*<", "<streamId>" + sys.argv[2].replace("\\", "\\\\") + "<", d); sys.stdout.write(re.sub(r"<lastOrdinal>\d+<", "<lastOrdinal>" + sys.argv[3] + "<", d))' "$FIX/4.4-stream-receipt-1.txt" "$STREAM" "$1" |
    python3 -c 'import sys; d = sys.stdin.buffer.read(); sys.stdout.buffer.write(d.split(b"\r\n\r\n", 1)[1] if b"\r\n\r\n" in d else d.split(b"\n\n", 1)[1])' >"$T/receipt"
  curl -s -o /dev/null -w '%{http_code}' -H 'Content-Type: text/xml; charset=UTF-8' \
    --data-binary @"$T/receipt" "http://127.0.0.1:$HERE/msmq/private\$/order_queue\$"
}
[ "$(receipt 4)" = 200 ] || fail "serve did not take the stream receipt"
until_true 10 sh -c '[ "$(mq-admin link stat cap --json | jq -r .receipted)" = 4 ]' ||
  fail "the link does not say 4 was receipted"
sleep 0.3  # the three are one batch, which ends as a whole: with ordinal 5's receipt
[ "$(mq-admin stat 'out;cap' --json | jq -r .messages)" = 3 ] || fail "a receipt for 4 ended ordinal 5"
[ "$(receipt 5)" = 200 ] || fail "serve did not take the second stream receipt"
until_true 10 sh -c '[ "$(mq-admin stat "out;cap" --json | jq -r .messages)" = 0 ]' ||
  fail "the receipt did not end the messages"
expect_rc 1 mq-receive replies  # nothing else: no receipt stored as a message
kill -TERM "$(tool_pid "$FWD")"
wait "$FWD" || fail "forward --follow did not end cleanly on SIGTERM: $(cat "$T/bg.$FWD.err")"

# A transactional message over a link without --receipts-url: a clear error.
expect_rc 0 mq-admin link set cap --receipts-url ''
expect_rc 0 mq-send --tx cap:orders t4
expect_rc 10 mq-admin forward cap --once --retry 0
grep -q "receipts-url" "$T/err" || fail "no --receipts-url is not said: $(cat "$T/err")"
expect_rc 0 mq-admin link delete cap --force

# Two stores over HTTP on 127.0.0.1: transactional and plain messages, each once, in order.
FAR=$T/far
expect_rc 0 mq-admin --store "$FAR" init
expect_rc 0 mq-admin --store "$FAR" create tq --transactional
expect_rc 0 mq-admin --store "$FAR" create q
serve_on "$FAR"
FARPORT=$PORT
expect_rc 0 mq-admin link add far --url "http://127.0.0.1:$FARPORT/msmq" \
  --receipts-url "http://127.0.0.1:$HERE/msmq/private\$/order_queue\$"
seq 1 300 | mq-send --tx -l far:tq || fail "send tx"
seq 1 200 | mq-send -l "DIRECT=http://127.0.0.1:$FARPORT/msmq/private\$/q" || fail "send plain"
seq 301 600 | mq-send --tx -l far:tq || fail "send tx"
expect_rc 0 timeout 60 mq-admin forward far --once --connections 8
[ "$(mq-admin stat 'out;far' --json | jq -r .messages)" = 0 ] || fail "out;far is not empty"
mq-receive --store "$FAR" -l -n 1000 tq >"$T/tq" 2>&1
seq 1 600 | cmp -s - "$T/tq" || fail "the far store's tq does not hold 1..600 once, in order: $(head -3 "$T/tq")"
mq-receive --store "$FAR" -l -n 1000 q | sort -n >"$T/q"
seq 1 200 | cmp -s - "$T/q" || fail "the far store's q does not hold 1..200 once"
# Many kept-alive connections, opened again and again (forward with 64 connections, then 16,
# ...): no POST may wait for serve to accept its connection until the forward's timeout
# (seen before serve ran libmicrohttpd on a tick: a 5 s timeout failed most such rounds).
for c in 64 16 64 48 64; do
  seq 1 3000 | mq-send -l far:q || fail "send plain"
  expect_rc 0 timeout 60 mq-admin forward far --once --connections "$c" --timeout 5s --retry 0
done

# The far side closes kept-alive connections while a --follow forward has nothing to post
# (serve's --idle-timeout 1s): the next messages go on new connections at once, not after
# the forward's timeout (20 s here). forward keeps a pooled connection watched between POSTs.
start mq-admin --store "$FAR" serve --http 127.0.0.1:0 --idle-timeout 1s
IDLE_SERVE=$PID
until_true 10 grep -qs "listening on" "$T/bg.$IDLE_SERVE.err" || fail "serve did not start"
IPORT=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$T/bg.$IDLE_SERVE.err")
expect_rc 0 mq-admin link add idle --url "http://127.0.0.1:$IPORT/msmq"
far_q_holds() { [ "$(mq-admin --store "$FAR" stat q --json | jq -r .messages)" = "$1" ]; }
before=$(mq-admin --store "$FAR" stat q --json | jq -r .messages)
start mq-admin forward idle --follow --connections 4 --timeout 20s
IDLE_FWD=$PID
seq 1 8 | mq-send -l idle:q || fail "send plain"
until_true 10 far_q_holds $((before + 8)) ||
  fail "forward --follow did not post the first 8 messages"
sleep 2.5  # serve closes the 4 idle connections after 1 s
seq 9 16 | mq-send -l idle:q || fail "send plain"
until_true 5 far_q_holds $((before + 16)) ||
  fail "after serve closed its idle connections, forward did not post the next 8 within 5 s: $(cat "$T/bg.$IDLE_FWD.err")"
kill -TERM "$(tool_pid "$IDLE_FWD")"
wait "$IDLE_FWD" || fail "forward --follow did not end cleanly on SIGTERM"
finish
