#!/bin/bash
# Where the store is: the default location is created on first use, $XDG_DATA_HOME is
# honoured, and a store named by --store is created only by `mq-admin init` or --create.
. "$(dirname "$0")/lib.sh"

# MQ_STORE unset, HOME set, XDG_DATA_HOME unset: ~/.local/share/mq, made on first use.
unset MQ_STORE
mkdir -p "$HOME"
expect_rc 0 mq-send --create q one
[ -f "$HOME/.local/share/mq/data.mdb" ] || fail "no store at ~/.local/share/mq after the first send"
expect_rc 0 mq-receive q
expect_out one
# The default store is used even by a tool that never writes (first use is a peek).
rm -rf "$HOME/.local"
expect_rc 3 mq-peek q
expect_err_match 'q: .*MQ_ERROR_QUEUE_NOT_FOUND'
[ -f "$HOME/.local/share/mq/data.mdb" ] || fail "a peek did not create the missing default store"

# XDG_DATA_HOME wins over HOME.
export XDG_DATA_HOME=$T/xdg
expect_rc 0 mq-send --create x two
[ -f "$T/xdg/mq/data.mdb" ] || fail "no store at \$XDG_DATA_HOME/mq"
expect_rc 3 mq-peek -s "$HOME/.local/share/mq" x
expect_rc 0 mq-peek x
expect_out two
# ... and MQ_STORE wins over both.
export MQ_STORE=$STORE
expect_rc 0 mq-send --create m three
[ -f "$STORE/data.mdb" ] || fail "no store at \$MQ_STORE"
expect_rc 3 mq-peek x
expect_rc 0 mq-peek m
expect_out three
unset XDG_DATA_HOME

# --store naming a missing store: 3, and nothing is created.
for tool in "mq-send q body" "mq-peek q" "mq-receive q" "mq-admin list" "mq-admin create q"; do
  expect_rc 3 $tool --store "$T/typo"
  expect_err_match 'typo.*store not found'
  [ -e "$T/typo" ] && fail "'$tool --store' created the missing store" && rm -rf "$T/typo"
done
# --create makes it (store and queue).
expect_rc 0 mq-send --store "$T/named" --create q body
expect_rc 0 mq-peek --store "$T/named" q
expect_out body

# mq-admin init creates it; a second init is fine and keeps what is there.
expect_rc 0 mq-admin --store "$T/inited" init
expect_out ''
[ -f "$T/inited/data.mdb" ] || fail "mq-admin init made no data.mdb"
expect_rc 0 mq-send -s "$T/inited" --create q kept
expect_rc 0 mq-admin --store "$T/inited" init
expect_rc 0 mq-peek -s "$T/inited" q
expect_out kept

# Modes: directory 0700, data.mdb and lock.mdb 0600, whatever the umask.
umask 022
expect_rc 0 mq-admin -s "$T/modes" init
run stat -c %a "$T/modes" "$T/modes/data.mdb" "$T/modes/lock.mdb"
expect_out $'700\n600\n600\n'
umask 000
expect_rc 0 mq-send -s "$T/modes2" --create q x
run stat -c %a "$T/modes2" "$T/modes2/data.mdb" "$T/modes2/lock.mdb"
expect_out $'700\n600\n600\n'

finish
