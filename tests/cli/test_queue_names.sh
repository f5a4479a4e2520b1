#!/bin/bash
# Queue references: bad names are usage errors (2, one line on stderr, nothing on disk);
# journals, system queues and MSMQ format names address the right queue.
. "$(dirname "$0")/lib.sh"

expect_rc 0 mq-admin init
long124=$(printf 'q%.0s' $(seq 124))
long125=${long124}q
bad=('../x' 'a/b' '' "$long125" $'ctl\x01x' $'new\nline' $'tab\tx' '.hidden' 'system' 'system;foo'
     'a b' 'orders;' ';orders' 'a;b;c' 'DIRECT=OS:otherhost\private$\q' 'DIRECT=TCP:10.0.0.1\q'
     'x*' 'é')
for name in "${bad[@]}"; do
  shown=$(printf %q "$name")
  for tool in mq-send mq-peek mq-receive; do
    # Another computer's queue is a remote queue to mq-send (issue 14): no such link here.
    if [ $tool = mq-send ] && [ "$name" = 'DIRECT=OS:otherhost\private$\q' ]; then
      expect_rc 3 $tool --create "$name" body
      expect_err_match '^mq-send: otherhost: no such link'
      continue
    fi
    if [ $tool = mq-send ]; then expect_rc 2 $tool --create "$name" body
    else expect_rc 2 $tool "$name"; fi
    expect_err_match 'MQ_ERROR_ILLEGAL_QUEUE_PATHNAME'
    [ -s "$T/out" ] && fail "$tool $shown printed on stdout"
  done
  expect_rc 2 mq-admin create "$name"
  expect_err_match 'MQ_ERROR_ILLEGAL_QUEUE_PATHNAME'
done
# Nothing of those names reached the disk or the catalog.
[ -e "$T/x" ] || [ -e "$STORE/../x" ] || [ -e "$STORE/a" ] && fail "a queue name became a path"
run ls -A "$STORE"
expect_out $'data.mdb\nlock.mdb\nlocks\nmq-store\nnotify\n'
expect_rc 0 mq-admin list
expect_out $'system;deadletter\nsystem;deadxact\nsystem;journal\n'

# 124 characters is the limit; the name is kept exactly (case-sensitive).
expect_rc 0 mq-send --create "$long124" at-limit
expect_rc 0 mq-peek "$long124"
expect_out at-limit
expect_rc 0 mq-send --create Orders upper
expect_rc 0 mq-send --create orders lower
expect_rc 0 mq-peek Orders
expect_out upper
expect_rc 0 mq-peek orders
expect_out lower

# The journal of an existing queue reads as a queue (empty: 1), not "no such queue".
expect_rc 1 mq-peek 'orders;journal'
expect_err_match "^mq-peek: orders;journal: .*MQ_ERROR_MESSAGE_NOT_FOUND"
expect_rc 1 mq-receive 'orders;journal'
expect_err_match "MQ_ERROR_MESSAGE_NOT_FOUND"
expect_rc 3 mq-peek 'nosuch;journal'
expect_err_match "MQ_ERROR_QUEUE_NOT_FOUND"
# The system queues exist in every store.
for q in 'system;deadletter' 'system;deadxact' 'system;journal'; do
  expect_rc 1 mq-peek "$q"
  expect_err_match "MQ_ERROR_MESSAGE_NOT_FOUND"
done

# MSMQ format names of a local private queue name the same queue (prefix case-insensitive).
expect_rc 0 mq-send '.\private$\orders' via-path
expect_rc 0 mq-send 'DIRECT=OS:.\private$\orders' via-direct
expect_rc 0 mq-send 'direct=os:.\PRIVATE$\orders' via-lower
expect_rc 0 mq-receive --all -l orders
expect_out $'lower\nvia-path\nvia-direct\nvia-lower\n'
expect_rc 0 mq-send orders again
expect_rc 0 mq-receive '.\private$\orders'
expect_out again
expect_rc 0 mq-send orders again
expect_rc 0 mq-peek 'DIRECT=OS:.\private$\orders'
expect_out again
expect_rc 3 mq-peek '.\private$\nosuch'
expect_err_match 'MQ_ERROR_QUEUE_NOT_FOUND'

finish
