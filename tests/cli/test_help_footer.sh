#!/bin/bash
# --help of each tool (issue 15, section 2) ends with examples and the man page to read:
# "Examples:", lines of the tool's own commands, then "See TOOL(1)." as the last line. The
# examples' options are ones the tool has.
. "$(dirname "$0")/lib.sh"

for t in mq-send mq-peek mq-receive mq-watch; do
  expect_rc 0 $t --help
  [ "$(tail -n 1 "$T/out")" = "See $t(1)." ] || fail "$t --help does not end with 'See $t(1).': $(tail -n 1 "$T/out")"
  sed -n '/^Examples:$/,$p' "$T/out" >"$T/examples"
  n=$(grep -c "^  \(.*| \)\?$t " "$T/examples")
  [ "$n" -ge 3 ] || fail "$t --help shows $n examples: $(cat "$T/examples")"
  # Each option used in an example is one --help lists.
  for opt in $(grep -o -- ' --\?[a-z][-a-z]*' "$T/examples" | sort -u); do
    grep -Eq -- "^  (-[-a-zA-Z0-9]+,)*$opt[ ,]" "$T/out" || fail "$t --help example uses $opt, which it does not list"
  done
  # Usage comes first, as in every other tool's help.
  [ "$(sed -n 2p "$T/out")" = "Usage: $t [OPTIONS] $(sed -n 2p "$T/out" | cut -d' ' -f4-)" ] ||
    fail "$t --help: the second line is not its usage: $(sed -n 2p "$T/out")"
done
finish
