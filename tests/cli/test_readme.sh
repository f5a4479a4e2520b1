#!/bin/bash
# The README's tour works when pasted in order on a fresh store (issue 15, section 4): every
# ```sh block of README.md (not ```sh norun, the build and install steps) runs, in order, in one
# bash with `set -e`, in a fresh directory that is also $HOME, with the built tools first in
# PATH and MQ_STORE naming a store that does not exist yet.
. "$(dirname "$0")/lib.sh"

command -v jq >/dev/null || skip "jq is not installed"
awk '
  /^```sh$/ { on = 1; next }
  /^```/ { on = 0; next }
  on { print }
' "$MQ_SRC/README.md" >"$T/tour.sh"
[ "$(grep -c . "$T/tour.sh")" -gt 20 ] || fail "the README has no tour to run: $(cat "$T/tour.sh")"
mkdir -p "$T/home" "$T/run"
(
  cd "$T/run" || exit 99
  export HOME=$T/home
  printf 'echo TOUR-DONE\n' >>"$T/tour.sh"
  # Under the sanitizers each of the tour's thousand receives starts several times slower: a
  # clean-clone ASan run on the 2-core machine reached the 606th in 120 s.
  timeout "$([ -n "${MQ_SANITIZED:-}" ] && echo 480 || echo 120)" bash -e "$T/tour.sh" </dev/null
) >"$T/out" 2>"$T/err"
RC=$?
[ "$RC" = 0 ] || fail "the tour exited $RC; stderr: $(tail -5 "$T/err")"
grep -q '^TOUR-DONE$' "$T/out" || fail "the tour did not reach its end"
# A few things it promises.
grep -q '^working on 1000$' "$T/out" || fail "the receive loop did not drain jobs"
grep -q '^4$' "$T/out" || fail "the reply to 2+2 did not come back: $(tail -3 "$T/out")"
[ -s "$T/run/done.tsv" ] || fail "RECEIVE ... INTO wrote nothing"
grep -q 'arrived$' "$T/out" || fail "mq-watch --follow reported nothing"

# Its "Available now" list names every mq-admin command, as `mq-admin --help` lists them.
want=$(mq-admin --help | sed -n '/^Subcommands:/,$s/^  \([a-z-]*\) .*/\1/p' | sort | tr '\n' ' ')
got=$(awk '/^Available now:/ { on = 1 } on { print } on && /\)/ { exit }' "$MQ_SRC/README.md" |
  tr '\n' ' ' | sed 's/.*`mq-admin` (\([^)]*\)).*/\1/' | tr -d ' ' | tr , '\n' | sort | tr '\n' ' ')
[ "$got" = "$want" ] || fail "README's Available now lists '$got'; mq-admin --help lists '$want'"
finish
