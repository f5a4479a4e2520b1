#!/usr/bin/env bash
# serve_http.sh: how fast mq-admin serve takes MSMQ's HTTP transport (issue 27): N SRMP
# documents of 1 KiB bodies (exported from a queue, as MSMQ would POST them) POSTed on
# loopback
#
#   (a) by curl --parallel (16 at once, kept-alive connections): what serve takes when the
#       sender keeps many POSTs in flight, as MSMQ does
#   (b) by a shell loop of curl, one process and one connection per message (the first
#       LOOP_N of them): what a script posting to an HTTP endpoint does today
#   (c) mq-admin forward over a pipe, the same messages, store to store (mq's own transport)
#   (d) mq-admin forward of an HTTP link (link add --url) to another store's serve: plain
#       messages, each ended by its POST's 200
#   (e) the same, transactional: one <Stream>, each message ended by a stream receipt
#       (CONNECTIONS, default 16: POSTs in flight at once; each serve takes up to
#       MAX_CONNECTIONS, default 256, as --max-connections: a forward with more connections
#       than the far serve takes has the rest wait for their timeout)
#   (f) the transport's floor (bench/c/http_floor.c): the same POST sent N times on
#       CONNECTIONS connections by a C sender to a C receiver that only finds each request's
#       end and answers 200, no library on either side: loopback TCP and wake-ups alone
#   (g) the same with libcurl as the sender, driven as forward drives it (multi interface,
#       curl_multi_socket_action on epoll, each easy handle set up once): what the library
#       the issue names for posting costs before any of mq's work, on either side
#
#   bench/serve_http.sh [N]     default N=20000; LOOP_N (default 500)
#
# Prints messages per second and the ratios: serve through (a) against (c), the issue's "at
# least 50% of the pipe forward", and (a) against (b), "at least 20x the curl loop"; the same
# for (d) and (e), the issue's benchmark of forward over HTTP.
# Needs curl, gcc and libcurl's headers (libcurl4-openssl-dev, which the build needs too) and
# built mq tools (MQ_BIN, default build/).
set -euo pipefail
SRC=$(cd "$(dirname "$0")/.." && pwd)
MQ_BIN=${MQ_BIN:-$SRC/build}
PATH=$MQ_BIN:$PATH
N=${1:-20000}
LOOP_N=${LOOP_N:-500}
T=$(mktemp -d "${BENCH_DIR:-/var/tmp}/mq-bench-serve.XXXXXX")
SERVE_PID=
HERE_PID=
THERE_PID=
trap 'kill $SERVE_PID $HERE_PID $THERE_PID 2>/dev/null; rm -rf "$T"' EXIT

now() { date +%s.%N; }
rate() { awk -v n="$1" -v a="$2" -v b="$3" 'BEGIN { printf "%.0f", n / (b - a) }'; }
us_each() { awk -v n="$N" -v s="$1" 'BEGIN { printf "%.0f", s * 1e6 / n }'; }  # SECONDS of N

# The floors of (f) and (g), built first: a missing compiler or libcurl header fails here.
gcc -O2 -o "$T/http_floor" "$SRC/bench/c/http_floor.c" -lcurl

# The documents: N messages of 1 KiB, recoverable, exported as SRMP.
export MQ_STORE=$T/src
mq-admin create q
head -c 1024 /dev/urandom | base64 -w 0 | head -c 1024 >"$T/body"
head -n "$N" < <(yes "$(cat "$T/body")") >"$T/lines"
mq-send -l q <"$T/lines"
mq-admin export q --format srmp >"$T/docs" 2>/dev/null
mkdir "$T/d"
python3 - "$T/docs" "$T/d" <<'EOF'
import sys
data = open(sys.argv[1], "rb").read()
docs = [b"POST " + d for d in data.split(b"POST ")[1:]]
with open(sys.argv[2] + "/curl.cfg", "w") as cfg:
    for i, d in enumerate(docs):
        head, _, body = d.partition(b"\r\n\r\n")
        ctype = [l.split(b": ", 1)[1] for l in head.split(b"\r\n")
                 if l.lower().startswith(b"content-type:")][0].decode()
        open("%s/%d" % (sys.argv[2], i), "wb").write(body)
        if i == 0:
            open(sys.argv[2] + "/request", "wb").write(d)
        cfg.write('url = "http://127.0.0.1:PORT/msmq/private$/q"\n')
        cfg.write('data-binary = "@%s/%d"\n' % (sys.argv[2], i))
        cfg.write('header = "Content-Type: %s"\n' % ctype.replace('"', '\\"'))
        cfg.write('output = "/dev/null"\n')
        if i + 1 < len(docs):
            cfg.write("next\n")
    open(sys.argv[2] + "/ctype", "w").write(ctype)
EOF

# The receiving store and its endpoint.
export MQ_STORE=$T/dst
mq-admin create q
mq-admin serve --http 127.0.0.1:0 --max-connections ${MAX_CONNECTIONS:-256} 2>"$T/serve.err" &
SERVE_PID=$!
for ((i = 0; i < 200; i++)); do grep -qs "listening on" "$T/serve.err" && break; sleep 0.02; done
PORT=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$T/serve.err")
sed -i "s/PORT/$PORT/" "$T/d/curl.cfg"

echo "mq serve benchmark: $N SRMP documents of 1 KiB bodies on loopback ($(nproc) CPUs)"
a0=$(now)
curl -s --no-progress-meter --parallel --parallel-max ${PARALLEL:-16} -K "$T/d/curl.cfg"
a1=$(now)
got=$(mq-admin stat q --json | python3 -c 'import json, sys; print(json.load(sys.stdin)["messages"])')
[ "$got" = "$N" ] || echo "WARNING: serve stored $got of $N messages"
ra=$(rate "$N" "$a0" "$a1")

ctype=$(cat "$T/d/ctype")
b0=$(now)
for ((i = 0; i < LOOP_N; i++)); do
  curl -s -o /dev/null -H "Content-Type: $ctype" --data-binary @"$T/d/$i" \
    "http://127.0.0.1:$PORT/msmq/private\$/q"
done
b1=$(now)
rb=$(rate "$LOOP_N" "$b0" "$b1")
kill "$SERVE_PID"
wait "$SERVE_PID" 2>/dev/null || true
SERVE_PID=

# (c) mq's own transfer over a pipe, the same messages.
export MQ_STORE=$T/src
mq-admin link add b --via "mq-admin --store '$T/pipe' accept" >/dev/null
MQ_STORE=$T/pipe mq-admin create q
mq-send -l 'b:q' <"$T/lines"
c0=$(now)
mq-admin forward b --once 2>/dev/null
c1=$(now)
rc=$(rate "$N" "$c0" "$c1")

# (d) mq-admin forward of an HTTP link to another store's serve, the same messages: plain
# (each ends at its 200), then transactional (each ends when a stream receipt covers it).
export MQ_STORE=$T/hsrc
MQ_STORE=$T/hdst mq-admin create q
MQ_STORE=$T/hdst mq-admin create tq --transactional
mq-admin serve --http 127.0.0.1:0 --max-connections ${MAX_CONNECTIONS:-256} 2>"$T/here.err" &
HERE_PID=$!
MQ_STORE=$T/hdst mq-admin serve --http 127.0.0.1:0 --max-connections ${MAX_CONNECTIONS:-256} 2>"$T/there.err" &
THERE_PID=$!
for ((i = 0; i < 200; i++)); do
  grep -qs "listening on" "$T/here.err" && grep -qs "listening on" "$T/there.err" && break
  sleep 0.02
done
HPORT=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$T/here.err")
TPORT=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$T/there.err")
mq-admin link add h --url "http://127.0.0.1:$TPORT/msmq" \
  --receipts-url "http://127.0.0.1:$HPORT/msmq/private\$/order_queue\$" >/dev/null
mq-send -l h:q <"$T/lines"
d0=$(now)
mq-admin forward h --once --connections ${CONNECTIONS:-16}
d1=$(now)
split -l 5000 "$T/lines" "$T/tx."
for f in "$T"/tx.*; do mq-send --tx -l h:tq <"$f"; done
e0=$(now)
mq-admin forward h --once --connections ${CONNECTIONS:-16}
e1=$(now)
got=$(MQ_STORE=$T/hdst mq-admin stat q --json | python3 -c 'import json, sys; print(json.load(sys.stdin)["messages"])')
[ "$got" = "$N" ] || echo "WARNING: forward over HTTP stored $got of $N plain messages"
got=$(MQ_STORE=$T/hdst mq-admin stat tq --json | python3 -c 'import json, sys; print(json.load(sys.stdin)["messages"])')
[ "$got" = "$N" ] || echo "WARNING: forward over HTTP stored $got of $N transactional messages"
kill "$HERE_PID" "$THERE_PID"
wait "$HERE_PID" "$THERE_PID" 2>/dev/null || true
HERE_PID= THERE_PID=
rd=$(rate "$N" "$d0" "$d1")
re=$(rate "$N" "$e0" "$e1")

# (f), (g): the floors, with the first of the same documents.
read -r _ tf cf < <("$T/http_floor" "$T/d/request" "$N" ${CONNECTIONS:-16})
read -r _ tg cg < <("$T/http_floor" --libcurl "$T/d/request" "$N" ${CONNECTIONS:-16})
rf=$(rate "$N" 0 "$tf")
rg=$(rate "$N" 0 "$tg")

printf '  %-58s %10s msg/s\n' "(a) curl --parallel ${PARALLEL:-16} -> serve (kept-alive)" "$ra"
printf '  %-58s %10s msg/s\n' "(b) shell loop of curl, one per message ($LOOP_N)" "$rb"
printf '  %-58s %10s msg/s\n' "(c) mq-admin forward over a pipe (store to store)" "$rc"
printf '  %-58s %10s msg/s\n' "(d) mq-admin forward over HTTP, plain (${CONNECTIONS:-16} connections)" "$rd"
printf '  %-58s %10s msg/s\n' "(e) mq-admin forward over HTTP, transactional stream" "$re"
printf '  %-58s %10s msg/s  (%s us CPU a message)\n' "(f) floor: C sender -> C receiver, no libraries" "$rf" \
  "$(us_each "$cf")"
printf '  %-58s %10s msg/s  (%s us CPU a message)\n' "(g) floor with libcurl sending (as forward does)" "$rg" \
  "$(us_each "$cg")"
awk -v a="$ra" -v b="$rb" -v c="$rc" -v d="$rd" -v e="$re" -v f="$rf" -v g="$rg" 'BEGIN {
  printf "  ratio (a)/(c)  %.2fx   target >= 0.5x: %s\n", a / c, ((a / c >= 0.5) ? "ok" : "MISS")
  printf "  ratio (a)/(b)  %.1fx   target >= 20x:  %s\n", a / b, ((a / b >= 20) ? "ok" : "MISS")
  printf "  ratio (d)/(c)  %.2fx   target >= 0.5x: %s\n", d / c, ((d / c >= 0.5) ? "ok" : "MISS")
  printf "  ratio (e)/(c)  %.2fx   target >= 0.5x: %s\n", e / c, ((e / c >= 0.5) ? "ok" : "MISS")
  printf "  ratio (d)/(b)  %.1fx   target >= 20x:  %s\n", d / b, ((d / b >= 20) ? "ok" : "MISS")
  printf "  ratio (e)/(b)  %.1fx   target >= 20x:  %s\n", e / b, ((e / b >= 20) ? "ok" : "MISS")
  printf "  ratio (g)/(c)  %.2fx   libcurl alone against the pipe forward (the 0.5x target)\n", g / c
  printf "  ratio (d)/(g)  %.2fx   forward over HTTP against libcurl alone\n", d / g
  printf "  ratio (f)/(c)  %.2fx   the transport alone against the pipe forward\n", f / c
}'
