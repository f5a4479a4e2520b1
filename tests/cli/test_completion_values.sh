#!/bin/bash
# Bash completion (issue 15, section 3): paths with spaces complete as one word; cursor names
# come from the store (`mq-admin cursors`) for mq-peek, mq-receive and mq-watch --cursor; every
# --format value is offered (and the zsh and fish files name them too). Every shell offers the
# commands `mq-admin --help` lists, after `mq-admin` and after `mq-admin help`, and each command
# group's subcommands (`mq-admin GROUP --help`) after `mq-admin GROUP` and `mq-admin help GROUP`.
. "$(dirname "$0")/lib.sh"

COMP=$MQ_SRC/completions
# offers FILE WORD...: bash_offers (lib.sh), run in $T/work.
offers() { (cd "$T/work" && bash_offers "$@"); }
mkdir -p "$T/work/my dir/sub dir" "$T/work/my store"
touch "$T/work/my dir/a file.tsv"

[ "$(offers "$COMP/bash/mq-peek" mq-peek --into 'my\ d')" = 'my dir' ] ||
  fail "mq-peek --into 'my\\ d' offers: $(offers "$COMP/bash/mq-peek" mq-peek --into 'my\ d' | tr '\n' '|')"
[ "$(offers "$COMP/bash/mq-receive" mq-receive --into 'my dir/a')" = 'my dir/a file.tsv' ] ||
  fail "mq-receive --into 'my dir/a' offers: $(offers "$COMP/bash/mq-receive" mq-receive --into 'my dir/a' | tr '\n' '|')"
[ "$(offers "$COMP/bash/mq-admin" mq-admin backup "'my d")" = 'my dir' ] ||
  fail "mq-admin backup \"'my d\" offers: $(offers "$COMP/bash/mq-admin" mq-admin backup "'my d" | tr '\n' '|')"
for t in mq-send mq-peek mq-receive mq-watch mq-admin; do
  [ "$(offers "$COMP/bash/$t" $t --store 'my\ s')" = 'my store' ] || fail "$t --store 'my\\ s' is not one word"
done

# Cursor names of the store.
expect_rc 0 mq-admin create q
expect_rc 0 mq-send q x
expect_rc 0 mq-peek q --cursor audit --first
expect_rc 0 mq-peek q --cursor auditors --first
for t in mq-peek mq-receive mq-watch; do
  got=$(offers "$COMP/bash/$t" $t q --cursor aud | sort | tr '\n' ' ')
  [ "$got" = "audit auditors " ] || fail "$t --cursor aud offers '$got'"
done
grep -q '^#.*_mq_cursor_names\|_mq_cursor_names' "$COMP/zsh/_mq-peek" || fail "zsh: no cursor names for mq-peek"
grep -q '__mq_cursor_names' "$COMP/fish/mq-watch.fish" || fail "fish: no cursor names for mq-watch"

# mq-send a,b,c (issue 26, item 7): the queue after the last comma.
expect_rc 0 mq-admin create qq
got=$(offers "$COMP/bash/mq-send" mq-send 'q,q' | sort | tr '\n' ' ')
[ "$got" = "q,q q,qq " ] || fail "bash: mq-send q,q offers '$got'"
if command -v fish >/dev/null; then
  got=$(fish_offers "$COMP/fish/mq-send.fish" 'mq-send qq,' | grep -v system | sort | tr '\n' ' ')
  [ "$got" = "qq,q qq,qq " ] || fail "fish: mq-send qq, offers '$got'"
fi
grep -q '_sequence _mq_queues' "$COMP/zsh/_mq-send" || fail "zsh: no lists of queues for mq-send"

# The optional duration of -w/-t in any written form (1m30s, 1.5s: issue 15) is skipped: the
# next word is still the queue, whose names are offered.
for t in mq-peek mq-receive mq-watch; do
  for w in 30s 1m30s 1.5s 5min; do
    offers "$COMP/bash/$t" $t -w $w '' | grep -qx q || fail "bash: $t -w $w offers no queue names"
    if command -v fish >/dev/null; then
      fish -N -c 'source $argv[1]; complete -C "$argv[2] -w $argv[3] "' "$COMP/fish/$t.fish" $t $w |
        cut -f1 | grep -qx q || fail "fish: $t -w $w offers no queue names"
    fi
  done
done

# Every --format value.
check_formats() {
  local file=$1 want=$2
  shift 2
  local got
  got=$(offers "$COMP/bash/$file" "$@" | sort | tr '\n' ' ')
  [ "$got" = "$want" ] || fail "'$*' offers '$got', expected '$want'"
}
check_formats mq-peek "csv json tsv " mq-peek q --format ''
check_formats mq-receive "csv json tsv " mq-receive q --format ''
check_formats mq-watch "json text " mq-watch q --format ''
check_formats mq-admin "json prometheus text " mq-admin stat --format ''
for c in list cursors locks conversations; do
  check_formats mq-admin "json text " mq-admin $c --format ''
done
check_formats mq-admin "json srmp " mq-admin export q --format ''
check_formats mq-admin "json srmp " mq-admin import q --format ''
# mq-admin bridge: each direction's own options once it is named.
in_opts=$(offers "$COMP/bash/mq-admin" mq-admin bridge in q -- | tr '\n' ' ')
out_opts=$(offers "$COMP/bash/mq-admin" mq-admin bridge out q -- | tr '\n' ' ')
for o in --from --prefetch --dedup-window; do
  [[ " $in_opts" == *" $o "* ]] || fail "bridge in does not offer $o: $in_opts"
  [[ " $out_opts" == *" $o "* ]] && fail "bridge out offers $o, an option of bridge in"
done
for o in --exchange --routing-key; do
  [[ " $out_opts" == *" $o "* ]] || fail "bridge out does not offer $o: $out_opts"
  [[ " $in_opts" == *" $o "* ]] && fail "bridge in offers $o, an option of bridge out"
done

# The subcommand lists. subs [GROUP]: what `mq-admin [GROUP] --help` lists, sorted, on one line.
subs() { mq-admin "$@" --help | sed -n '/^Subcommands:/,$s/^  \([a-z-]*\) .*/\1/p' | sort | words; }
words() { grep -E '^[a-z][a-z-]*$' | sort -u | tr '\n' ' '; }
# offered SHELL WORD...: what SHELL offers for `WORD... ` (an empty word being completed).
offered() {
  local shell=$1
  shift
  case $shell in
    bash) offers "$COMP/bash/mq-admin" "$@" '' ;;
    fish) (cd "$T/work" && fish_offers "$COMP/fish/mq-admin.fish" "$* ") ;;
    zsh) (cd "$T/work" && zsh_offers "$* " "$COMP/zsh") ;;
  esac | words
}
shells=bash
command -v fish >/dev/null && shells+=" fish"
command -v zsh >/dev/null && shells+=" zsh"
commands=$(subs)
case $commands in *" compact "*" link "*) ;; *) fail "mq-admin --help lists '$commands'" ;; esac
all=$( (printf '%s\n' $commands; echo help) | words)
for sh in $shells; do
  got=$(offered $sh mq-admin)
  [ "$got" = "$all" ] || fail "$sh: 'mq-admin ' offers '$got', expected '$all'"
  got=$(offered $sh mq-admin help)
  [ "$got" = "$commands" ] || fail "$sh: 'mq-admin help ' offers '$got', expected '$commands'"
  for g in bridge link message-type; do
    want=$(subs $g)
    [ -n "$want" ] || fail "mq-admin $g --help lists no subcommands"
    got=$(offered $sh mq-admin $g)
    [ "$got" = "$want" ] || fail "$sh: 'mq-admin $g ' offers '$got', expected '$want'"
    got=$(offered $sh mq-admin help $g)
    [ "$got" = "$want" ] || fail "$sh: 'mq-admin help $g ' offers '$got', expected '$want'"
  done
done
# Every command with subcommands is one of those three.
for c in $commands; do
  [ -z "$(subs $c)" ] || case $c in bridge | link | message-type) ;; *) fail "new group $c" ;; esac
done
finish
