#!/bin/bash
# A real ssh link (issue 14): a private sshd on 127.0.0.1 (its own port, a temporary host key,
# an authorized key for root) and a link whose command is
#   ssh -p PORT -i KEY ... root@127.0.0.1 /abs/path/mq-admin --store B accept
# mq-admin forward --once moves 2,000 messages (plain and a --tx batch) through it, exactly
# once and in order; both stores pass check. Skipped only where sshd is not installed.
. "$(dirname "$0")/lib.sh"
SSHD=$(command -v sshd || echo /usr/sbin/sshd)
[ -x "$SSHD" ] || skip "sshd is not installed (scripts/setup.sh installs openssh-server)"
command -v ssh >/dev/null || skip "ssh is not installed (scripts/setup.sh installs openssh-client)"
[ "$(id -u)" = 0 ] || skip "the private sshd logs in as root: run as root"
BG=()
_prev_exit=$(trap -p EXIT); _prev_exit=${_prev_exit#trap -- \'}; _prev_exit=${_prev_exit%\' EXIT}
trap 'for p in "${BG[@]}"; do ours "$p" && kill "$p" 2>/dev/null; done; '"$_prev_exit" EXIT

mkdir -p /run/sshd
chmod 0755 /run/sshd
ssh-keygen -q -t ed25519 -N '' -f "$T/host_key" || fail "host key"
ssh-keygen -q -t ed25519 -N '' -f "$T/id" || fail "client key"
cp "$T/id.pub" "$T/authorized_keys"
chmod 600 "$T/authorized_keys"
port=$((20000 + RANDOM % 20000))
cat >"$T/sshd_config" <<CFG
Port $port
ListenAddress 127.0.0.1
HostKey $T/host_key
AuthorizedKeysFile $T/authorized_keys
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
PidFile $T/sshd.pid
CFG
"$SSHD" -D -e -f "$T/sshd_config" 2>"$T/sshd.log" &
BG+=("$!")
SSH="ssh -p $port -i $T/id -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR -o BatchMode=yes root@127.0.0.1"
for ((i = 0; i < 100; i++)); do
  $SSH true 2>/dev/null && break
  sleep 0.1
done
$SSH true || { fail "cannot log in to the private sshd: $(tail -5 "$T/sshd.log")"; finish; }

B=$T/B
ADMIN=$(command -v mq-admin)
expect_rc 0 mq-admin --store "$B" init
expect_rc 0 mq-admin --store "$B" create dest
expect_rc 0 mq-admin --store "$B" create txq --transactional
expect_rc 0 mq-admin link add far --via "$SSH $ADMIN --store $B accept"
seq -f 'plain-%04g' 1000 | mq-send -l far:dest || fail "send plain"
seq -f 'tx-%04g' 1000 | mq-send --tx -l far:txq || fail "send tx"
expect_rc 0 mq-admin forward far --once
[ "$(mq-admin stat 'out;far' --json | jq .messages)" = 0 ] || fail "out;far not empty"
mq-peek --store "$B" dest --all -l >"$T/got" && mq-peek --store "$B" txq --all -l >>"$T/got" ||
  fail "peek at the far side"
{ seq -f 'plain-%04g' 1000; seq -f 'tx-%04g' 1000; } >"$T/want"
cmp -s "$T/got" "$T/want" || fail "over ssh: $(diff "$T/got" "$T/want" | head -5)"
expect_rc 0 mq-admin link stat far --json
[ "$(jq -r .peer "$T/out")" != "" ] || fail "link stat names no peer"
[ "$(jq -r .acknowledged "$T/out")" = 2000 ] || fail "link stat: $(cat "$T/out")"
# The far side down (sshd stopped): forward fails clearly, nothing lost.
kill "${BG[0]}"
wait "${BG[0]}" 2>/dev/null
mq-send far:dest after || fail "send while the far side is down"
expect_rc 10 mq-admin forward far --once --retry 300ms
grep -q 'exited before answering (exit status 255)' "$T/err" || fail "forward with sshd down: $(cat "$T/err")"
[ "$(mq-admin stat 'out;far' --json | jq .messages)" = 1 ] || fail "the message waiting was lost"
expect_rc 0 mq-admin check
expect_rc 0 mq-admin --store "$B" check
finish
