#!/bin/bash
# mq-admin serve over HTTPS ([MC-MQSRM] 2.1.1: HTTPS is how MSMQ secures the transport), with
# a private CA made here by openssl: a message POSTed over TLS is stored; plain HTTP to the TLS
# port stores nothing; with --client-ca, a client without a certificate, or with one another
# CA signed, is answered 403 and one the CA signed is served; the options are checked.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/bg.sh"
command -v curl >/dev/null || skip "curl is not installed"
command -v openssl >/dev/null || skip "openssl is not installed"

FIX=$MQ_SRC/tests/fixtures/srmp
cd "$T" || exit 1
# The CA, the server's certificate for 127.0.0.1, a client's, and a stranger's (its own CA).
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=mq-test-ca -keyout ca.key \
  -out ca.pem 2>/dev/null || fail "no CA"
openssl req -newkey rsa:2048 -nodes -subj /CN=127.0.0.1 -keyout server.key -out server.csr \
  2>/dev/null
printf 'subjectAltName=IP:127.0.0.1\n' >san.ext
openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 \
  -extfile san.ext -out server.pem 2>/dev/null || fail "no server certificate"
openssl req -newkey rsa:2048 -nodes -subj /CN=client -keyout client.key -out client.csr 2>/dev/null
openssl x509 -req -in client.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 \
  -out client.pem 2>/dev/null || fail "no client certificate"
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=stranger -keyout stranger.key \
  -out stranger.pem 2>/dev/null || fail "no stranger certificate"

expect_rc 0 mq-admin create simpleq
# The 4.1 sample without its HTTP request.
sed '1,/^\r$/d' "$FIX/4.1-simple.txt" >"$T/body"
CT='multipart/related; boundary="MSMQ - SOAP boundary, 53287"; type=text/xml'
serve() {
  start mq-admin serve --http 127.0.0.1:0 --tls-cert server.pem --tls-key server.key "$@"
  SERVE=$PID
  until_true 10 grep -qs "listening on" "$T/bg.$SERVE.err" || fail "serve did not start: $(cat "$T/bg.$SERVE.err")"
  PORT=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$T/bg.$SERVE.err")
}
post() {  # post SCHEME CURL-OPTIONS...: the HTTP status, 000 when there was none
  local scheme=$1
  shift
  curl -s -m 10 -o "$T/resp" -w '%{http_code}' -H "Content-Type: $CT" --data-binary @"$T/body" \
    "$@" "$scheme://127.0.0.1:$PORT/msmq/private\$/simpleq"
}
count() { mq-admin stat "$1" --json | jq -r .messages; }

serve
code=$(post https --cacert ca.pem)
[ "$code" = 200 ] || fail "HTTPS POST: $code $(cat "$T/resp")"
[ "$(count simpleq)" = 1 ] || fail "the message POSTed over HTTPS was not stored"
code=$(post http)
[ "$code" = 200 ] && fail "plain HTTP to the TLS port was answered 200"
# curl checks the server's certificate against the CA: a stranger's CA is refused by curl.
code=$(post https --cacert stranger.pem)
[ "$code" = 000 ] || fail "curl accepted the server with the wrong CA: $code"
[ "$(count simpleq)" = 1 ] || fail "something else was stored"
# mq-admin forward of an HTTPS link (issue 27): the far certificate is checked against
# --cacert; a wrong CA fails the POST and loses nothing.
SRC=$T/src
expect_rc 0 mq-admin --store "$SRC" init
expect_rc 0 mq-admin --store "$SRC" link add tls --url "https://127.0.0.1:$PORT/msmq"
expect_rc 0 mq-send --store "$SRC" tls:simpleq over-tls
expect_rc 10 mq-admin --store "$SRC" forward tls --once --retry 0 --cacert stranger.pem
expect_err_match 'cannot post to https://127.0.0.1:[0-9]*/msmq: SSL peer certificate'
[ "$(mq-admin --store "$SRC" stat 'out;tls' --json | jq -r .messages)" = 1 ] ||
  fail "a refused certificate lost the message"
expect_rc 0 mq-admin --store "$SRC" forward tls --once --cacert ca.pem
[ "$(count simpleq)" = 2 ] || fail "the message forwarded over HTTPS was not stored"
expect_rc 0 mq-receive simpleq  # the first, POSTed by curl
expect_rc 0 mq-receive simpleq
expect_out "over-tls"
kill -TERM "$(tool_pid "$SERVE")"
wait "$SERVE"

# A slow client over TLS, a byte a second: answered 408 after the request timeout (2s), as
# over plain HTTP, while others are served.
serve --request-timeout 2s
python3 "$MQ_SRC/tests/cli/slow_post.py" "$PORT" ca.pem >"$T/slow" &
slow=$!
code=$(post https --cacert ca.pem)
[ "$code" = 200 ] || fail "a POST beside the slow client: $code $(cat "$T/resp")"
wait $slow
grep -q '408' "$T/slow" || fail "a slow client over TLS got '$(cat "$T/slow")', not 408"
[ "$(count simpleq)" = 1 ] || fail "$(count simpleq) messages, expected the one POSTed beside it"
expect_rc 0 mq-receive simpleq
kill -TERM "$(tool_pid "$SERVE")"
wait "$SERVE"

# A client certificate required.
serve --client-ca ca.pem
code=$(post https --cacert ca.pem)
[ "$code" = 403 ] || fail "no client certificate: $code, expected 403"
grep -q 'client certificate' "$T/resp" || fail "the 403 does not say why: $(cat "$T/resp")"
code=$(post https --cacert ca.pem --cert stranger.pem --key stranger.key)
[ "$code" = 403 ] || [ "$code" = 000 ] || fail "a stranger's certificate: $code, expected 403"
code=$(post https --cacert ca.pem --cert client.pem --key client.key)
[ "$code" = 200 ] || fail "the CA's client: $code $(cat "$T/resp")"
[ "$(count simpleq)" = 1 ] || fail "$(count simpleq) messages, expected 1"
kill -TERM "$(tool_pid "$SERVE")"
wait "$SERVE"

# The options go together.
expect_rc 2 mq-admin serve --http 127.0.0.1:0 --tls-cert server.pem
expect_err_match 'go together'
expect_rc 2 mq-admin serve --http 127.0.0.1:0 --client-ca ca.pem
expect_err_match 'needs --tls-cert'
expect_rc 2 mq-admin serve --http 127.0.0.1:0 --tls-cert san.ext --tls-key server.key
expect_err_match 'no PEM'
expect_rc 2 mq-admin serve --http 127.0.0.1:0 --tls-cert nosuch.pem --tls-key server.key
expect_err_match 'nosuch.pem'
expect_rc 0 mq-admin check
finish
