#!/bin/bash
# The tool's own options after --exec (issue 25, trap 5): they belong to the command (the
# find -exec rule, kept), and one note on stderr says so when the command's arguments hold one
# of the tool's own long options. mq-watch's receivers do not repeat it.
. "$(dirname "$0")/lib.sh"

expect_rc 0 mq-admin init
expect_rc 0 mq-admin create jobs
cat >"$T/h.sh" <<'SH'
#!/bin/sh
printf '%s\n' "$*" >>"$ARGS"
cat >/dev/null
SH
chmod +x "$T/h.sh"
export ARGS=$T/args

# mq-receive: the words go to the command, and one note names them.
expect_rc 0 mq-send jobs a
expect_rc 0 mq-receive jobs --exec "$T/h.sh" --all --quiet=yes --other
expect_err_match "^mq-receive: note: --all, --quiet after --exec are passed to $T/h.sh; put mq-receive's options before --exec\$"
[ "$(cat "$ARGS")" = "--all --quiet=yes --other" ] || fail "the command got: $(cat "$ARGS")"
# Nothing to say: the command's own options, or everything after its --.
: >"$ARGS"
expect_rc 0 mq-send jobs b
expect_rc 0 mq-receive jobs --exec "$T/h.sh" --other -- --all
[ -s "$T/err" ] && fail "a note with no option of mq-receive's: $(cat "$T/err")"
expect_rc 0 mq-send jobs c
expect_rc 0 mq-receive jobs --exec "$T/h.sh" --help
[ -s "$T/err" ] && fail "--help is the command's own: $(cat "$T/err")"

# mq-watch: the issue's example. One note (not one per receiver), and the command got
# --max-readers 3 for each of the three messages.
: >"$ARGS"
for m in 1 2 3; do expect_rc 0 mq-send jobs "$m"; done
run timeout -s TERM 3 mq-watch jobs --exec "$T/h.sh" --max-readers 3
[ "$(grep -c . "$T/err")" = 1 ] || fail "mq-watch's stderr: $(cat "$T/err")"
grep -qx "mq-watch: note: --max-readers after --exec is passed to $T/h.sh; put mq-watch's options before --exec" "$T/err" ||
  fail "mq-watch's note: $(cat "$T/err")"
[ "$(grep -cx -- '--max-readers 3' "$ARGS")" = 3 ] || fail "the command got: $(cat "$ARGS")"
finish
