# lib.sh: sourced by every black-box test. Gives a private temporary store and assertions.
#
#   MQ_BIN   directory holding the built tools (set by CTest); defaults to ./build
#   MQ_SRC   the source tree
# Each test runs in its own temporary directory, removed at exit; $STORE is a fresh store
# path (not yet created), and MQ_STORE points at it so that tools find it by default.
set -u
MQ_SRC=${MQ_SRC:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
MQ_BIN=${MQ_BIN:-$MQ_SRC/build}
PATH=$MQ_BIN:$PATH
export PATH
T=$(mktemp -d "${TMPDIR:-/tmp}/mq-test.XXXXXX")
trap 'rm -rf "$T"' EXIT
STORE=$T/store
export MQ_STORE=$STORE
export HOME=$T/home
unset XDG_DATA_HOME
FAILS=0

# ours PID: whether PID is still a descendant of this shell (its child, or a child's child:
# a tool under `timeout`). pid_max is 32768 on the reference machines, and a long test's
# list of background pids outlives most of them: by the time an EXIT trap kills that list,
# a recycled pid can be another test's process (a tool of a test running beside this one,
# killed with SIGKILL for nothing).
ours() {
  local pid=$1 depth stat
  for depth in 1 2 3; do
    stat=$(cat /proc/"$pid"/stat 2>/dev/null) || return 1
    stat=${stat##*) }
    set -- $stat
    pid=${2:-0}
    [ "$pid" = "$$" ] && return 0
    [ "$pid" -gt 1 ] || return 1
  done
  return 1
}
fail() {
  printf 'FAIL: %s\n' "$*" >&2
  FAILS=$((FAILS + 1))
}

# run CMD...: runs CMD with stdout in $T/out, stderr in $T/err, exit status in $RC.
run() {
  "$@" >"$T/out" 2>"$T/err"
  RC=$?
}

# expect_rc N CMD...: runs CMD and asserts its exit status.
expect_rc() {
  local want=$1
  shift
  run "$@"
  if [ "$RC" != "$want" ]; then
    fail "'$*' exited $RC, expected $want; stderr: $(head -c 300 "$T/err")"
  fi
}

# expect_out TEXT: asserts that the last run printed exactly TEXT (no trailing newline added).
expect_out() {
  local got
  got=$(cat "$T/out"; printf x)
  got=${got%x}
  if [ "$got" != "$1" ]; then
    fail "stdout was '$(printf %q "$got")', expected '$(printf %q "$1")'"
  fi
}

# expect_err_match REGEX: asserts that stderr of the last run is one line matching REGEX.
expect_err_match() {
  local lines
  lines=$(wc -l <"$T/err")
  if [ "$lines" != 1 ] || ! grep -Eq -- "$1" "$T/err"; then
    fail "stderr '$(cat "$T/err")' is not one line matching /$1/"
  fi
}

# wait_holder_gone PID: after a kill of the mq-receive PID, waits (up to 10 s) until no lease of
# PID is held any more: the processes of its --exec command hold the lease until they end
# (mq-receive(1), --exec), a moment after the kill.
wait_holder_gone() {
  local i
  for ((i = 0; i < 500; i++)); do
    mq-admin locks 2>/dev/null | grep -Eq "	pid $1	.*	alive	" || return 0
    sleep 0.02
  done
  fail "the command of the killed mq-receive $1 still holds its lease after 10 s"
}

# skip REASON: ends the test as skipped (exit 77, CTest's SKIP_RETURN_CODE), never as passed.
skip() {
  echo "skipped: $*"
  exit 77
}

# need_nobody: for tests of access rules, which must run the tools as another account (as
# root, permissions deny nothing): skips unless this runs as root with setpriv, and user
# nobody can reach $T and run the tools. as_nobody CMD...: CMD as nobody, in no group.
as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups env PATH="$PATH" "$@"; }
need_nobody() {
  if [ "$(id -u)" != 0 ] || ! setpriv --reuid=65534 --regid=65534 --clear-groups true 2>/dev/null; then
    skip "needs root and setpriv to act as another user"
  fi
  chmod 755 "$T"
  if ! setpriv --reuid=65534 --regid=65534 --clear-groups test -x "$T"; then
    skip "user nobody cannot reach $T (a parent directory is private); set TMPDIR"
  fi
  as_nobody mq-send --version >/dev/null 2>&1 ||
    skip "user nobody cannot run the tools in $MQ_BIN (a parent directory is private)"
}

# The pinned-pages check, in two stores: pinned_setup A B makes both with a queue pq of 5,000
# messages; churn S runs three rounds of 20,000 sends and a drain of pq in S; pinned_check A B
# WHAT asserts that B's data.mdb (churned while WHAT held something or was stopped) grew no
# more than A's (churned alone): a reader that pins pages makes LMDB grow the file instead of
# reusing them.
pinned_setup() {
  local s
  for s in "$@"; do
    mq-admin -s "$s" init >/dev/null
    mq-admin -s "$s" create pq >/dev/null
    seq -f 'k%0100g' 5000 | mq-send -s "$s" -l pq
  done
}
churn() {
  local i
  for i in 1 2 3; do
    seq -f 'p%09g' 20000 | mq-send -s "$1" -l pq
    mq-receive -s "$1" pq --all -l >/dev/null
  done
}
pinned_check() {
  local a b
  a=$(stat -c %s "$1/data.mdb") b=$(stat -c %s "$2/data.mdb")
  [ "$b" -le $((a * 3 / 2 + 1048576)) ] || fail "$3 grew data.mdb to $b bytes (without it: $a)"
}

# finish: exit status of the test.
finish() {
  if [ "$FAILS" -ne 0 ]; then
    echo "$FAILS check(s) failed" >&2
    exit 1
  fi
  echo ok
  exit 0
}

# until_true SECONDS CMD...: runs CMD every 20 ms until it succeeds; false if it never did
# within SECONDS.
until_true() {
  local deadline=$((SECONDS + $1))
  shift
  while ! "$@"; do
    ((SECONDS > deadline)) && return 1
    sleep 0.02
  done
}

# bash_offers FILE WORD...: what the bash completion in FILE offers for the command line
# WORD... (the last word is the one being completed), one per line, run in the current directory.
bash_offers() {
  bash -c '
    . "$1" || exit 1
    shift
    COMP_WORDS=("$@")
    COMP_CWORD=$(($# - 1))
    COMP_LINE="$*"
    COMP_POINT=${#COMP_LINE}
    spec=$(complete -p "$1") || exit 1
    fn=${spec##*-F }
    fn=${fn%% *}
    COMPREPLY=()
    "$fn" "$1" "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"
    printf "%s\n" "${COMPREPLY[@]}"
  ' bash "$@" 2>/dev/null
}

# fish_offers FILE LINE: what fish offers for LINE after sourcing FILE.
fish_offers() {
  fish -N -c 'source $argv[1]; complete -C $argv[2]' "$1" "$2" 2>/dev/null | cut -f1
}

# zsh_offers LINE DIR: what zsh offers for LINE<TAB>, with DIR first in $fpath.
# It drives an interactive zsh in a pseudo-terminal (zsh/zpty) and
# replaces compadd with a function that prints the matches.
zsh_offers() {
  timeout 30 zsh -f -c '
    zmodload zsh/zpty || exit 2
    zpty z zsh -f -i
    init=$1/zsh-capture-init
    cat >$init <<EOF
PROMPT=
fpath=($2 \$fpath)
autoload -U compinit
compinit -u -d $1/zcompdump
bindkey "^I" complete-word
null-line() { echo -E - \$'"'"'\0'"'"' }
compprefuncs=(null-line)
comppostfuncs=(null-line exit)
zstyle ":completion:*" list-grouped false
zstyle ":completion:*" insert-tab false
compadd() {
  if [[ \${@[1,(i)(-|--)]} == *-(O|A|D)\ * ]]; then
    builtin compadd "\$@"
    return
  fi
  local -a __hits
  builtin compadd -A __hits "\$@"
  local h
  for h in \$__hits; do echo -E - "\$IPREFIX\$h"; done
}
echo ok
EOF
    zpty -w z "source $init"
    repeat 5; do
      zpty -r z line
      [[ $line == ok* ]] && break
    done
    [[ $line == ok* ]] || exit 2
    zpty -w z "$3"$'"'"'\t'"'"'
    integer tog=0
    while zpty -r z; do :; done | while IFS= read -r line; do
      if [[ $line == *$'"'"'\0\r'"'"' ]]; then
        (( tog++ )) && exit 0 || continue
      fi
      (( tog )) && echo -E - ${line%$'"'"'\r'"'"'}
    done
  ' zsh "$T" "$2" "$1" 2>/dev/null
}
