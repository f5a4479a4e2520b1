#!/bin/bash
# test_docs.sh: the man pages and the shell completions agree with the tools.
#
#   MQ_BIN=build MQ_SRC=. bash tests/cli/test_docs.sh
#
# What it checks:
#  (a) `mandoc -T lint -W warning` prints nothing for every page in man/, nor does -W style
#      (but for references to other projects' pages that are not installed); .Os is mq's.
#  (b) Every option token (-x and --long) that `TOOL --help` prints, and for
#      mq-admin that `mq-admin COMMAND --help` prints, is
#        - documented in the tool's page: an ".It Fl ..." item naming it in the
#          OPTIONS section (for an mq-admin command: among the ".It Fl" items of
#          that command's ".It Cm COMMAND" item), and shown in the SYNOPSIS;
#        - in each of the tool's three completion files: written as is in the
#          bash and zsh files, as "-s x" / "-l long" in the fish file; for an
#          mq-admin command, inside that command's branch (its "COMMAND)" case
#          arm in bash, "(COMMAND)" arm in zsh, a "complete" line whose condition
#          names COMMAND in fish);
#        - offered: bash's completion function offers it for "TOOL -" (or
#          "mq-admin COMMAND -"), and so do fish ("complete -C") and zsh (through
#          a pseudo-terminal) when they are installed.
#      Options that every mq-admin command accepts (-h, --help, and the common
#      -s, --store, --version) are checked once, for mq-admin itself.
#  (c) Every example in the EXAMPLES sections runs; see the convention below.
#  (d) `bash -n`, `zsh -n` and `fish --no-execute` accept the completion files
#      (a shell that is not installed is skipped, with a note on stderr).
#  (e) Every key that `mq-peek --json` prints is an ".It Va KEY" item of the
#      MESSAGES section of mq(7), in the order in which mq-peek prints them;
#      every key of an `mq-watch --json` event (arrived and error) is an
#      ".It Va KEY" item of the EVENTS section of mq-watch(1), in the order in
#      which mq-watch prints them.
#  (f) Every MQ_* variable that the command of `mq-receive --exec` gets is an
#      ".It Ev NAME" item of the ENVIRONMENT section of mq-receive(1).
#
# The EXAMPLES convention, for whoever writes a page:
#  - The page is rendered with `mandoc -T ascii`. In its EXAMPLES section, a
#    line whose first non-blank characters are "$ " is a command: the rest of
#    the line. Put examples in ".Bd -literal" displays so that they render as
#    written.
#  - Lines right after a command that start with "> " continue it, as the shell
#    prompts PS2: end the line before with a backslash (written "\e" in mdoc) or
#    leave a construct open (while ...; do).
#  - Any other line is output shown to the reader; it is not checked.
#  - A command must exit 0, unless its last line ends with the comment
#    "# exit N" (optionally followed by ": why"): then it must exit N.
#  - The commands of one page run in order in one bash process, so that queues
#    and variables made by one example serve the next, with `set -o pipefail`,
#    stdin from /dev/null, the built tools first in PATH, in a fresh empty
#    directory that is also $HOME, and with MQ_STORE naming a store that does not
#    exist yet. Examples must need nothing outside that directory.
. "$(dirname "$0")/lib.sh"

MAN=$MQ_SRC/man
COMP=$MQ_SRC/completions
TOOLS="mq-send mq-peek mq-receive mq-watch mq-admin"
EXAMPLE_TIMEOUT=120

have() { command -v "$1" >/dev/null 2>&1; }

# render PAGE: the page as plain text.
render() {
  mandoc -T ascii -O width=78 "$1" 2>/dev/null | sed 's/.\x08//g'
}

# help_options ARGS...: the options of `ARGS --help`, one per line, the names of
# one option joined by commas ("-n,--count").
help_options() {
  "$@" --help 2>/dev/null | sed -n 's/^  \(-[-A-Za-z0-9,]*\).*/\1/p'
}

# has_token FILE_OR_- TOKEN: the text contains TOKEN as a whole word (not part of
# a longer option such as --new-ids for -n).
has_token() {
  grep -Eq -- "(^|[^[:alnum:]-])$2([^[:alnum:]-]|\$)" "$1"
}

# section PAGE NAME: the mdoc source lines of section NAME.
section() {
  awk -v name="$2" '
    /^\.Sh / { on = (substr($0, 5) == name); next }
    on' "$1"
}

# command_block PAGE COMMAND: the source of mq-admin's ".It Cm COMMAND" item.
command_block() {
  section "$1" COMMANDS | awk -v cmd="$2" '
    /^\.It Cm / { split($0, w, " "); on = (w[3] == cmd); next }
    on'
}

# rendered_section PAGE NAME: the rendered text of section NAME.
rendered_section() {
  render "$1" | awk -v name="$2" '
    /^[A-Z]/ { on = ($0 == name); next }
    on'
}

# man_item TEXT_FILE OPTION: an ".It Fl" line of the source names OPTION.
man_item() {
  local name=${2#-}
  grep -E '^\.It Fl ' "$1" | grep -Eq -- "(^|[[:space:]])Fl[[:space:]]+$name([[:space:]]|\$)"
}

# fish_has FILE OPTION: the fish file completes OPTION ("-s x" or "-l long").
fish_has() {
  case $2 in
    --*) grep -Eq -- "(^|[[:space:]])(-l|--long-option)[[:space:]]+${2#--}([[:space:]]|\$)" "$1" ;;
    -*) grep -Eq -- "(^|[[:space:]])(-s|--short-option)[[:space:]]+${2#-}([[:space:]]|\$)" "$1" ;;
  esac
}

# case_arm FILE COMMAND: the lines of the "COMMAND)" or "(COMMAND)" case arm.
case_arm() {
  awk -v cmd="$2" '
    !on && match($0, /^[[:space:]]*\(?[a-z|-]+\)[[:space:]]*$/) {
      arm = $0
      gsub(/[[:space:]()]/, "", arm)
      n = split(arm, names, "|")
      for (i = 1; i <= n; i++) if (names[i] == cmd) on = 1
      if (on) next
    }
    on && /;;/ { on = 0 }
    on' "$1"
}

# fish_offers and zsh_offers: lib.sh.

# ---------------------------------------------------------------------------
# (a) lint

if ! have mandoc; then
  fail "mandoc is not installed: cannot check the man pages (apt-get install mandoc)"
  finish
fi
PAGES=$(ls "$MAN"/*.[1-9] 2>/dev/null)
for t in $TOOLS; do
  [ -f "$MAN/$t.1" ] || fail "man/$t.1 is missing"
done
[ -f "$MAN/mq.7" ] || fail "man/mq.7 is missing"
# -W style too. Cross-references are looked up in a manual path that holds these pages (made
# with makewhatis), then the system's; a reference to another project's page that is not
# installed here (cron(8) without cron) and the system database's own staleness are not the
# page's fault, and are all that is let through.
MANDB=$T/mandb
mkdir -p "$MANDB/man1" "$MANDB/man7"
cp "$MAN"/*.1 "$MANDB/man1/" && cp "$MAN"/*.7 "$MANDB/man7/"
if have makewhatis; then makewhatis "$MANDB" >/dev/null 2>&1; fi
ours=" $(cd "$MAN" && ls | sed 's/\.\([1-9]\)$/ \1/' | tr '\n' ',') "
lint_ok() {
  local line=$1 ref
  case $line in
    *"outdated mandoc.db"*) return 0 ;;
    *"referenced manual not found: Xr "*)
      ref=${line##*Xr }
      ref=${ref% (*}
      case $ours in *" $ref,"* | *",$ref,"*) return 1 ;; esac
      # shellcheck disable=SC2086
      ! man -w $(echo "$ref" | awk '{ print $2, $1 }') >/dev/null 2>&1
      return
      ;;
  esac
  return 1
}
for page in $PAGES; do
  out=$(mandoc -T lint -W warning "$page" 2>&1)
  [ -z "$out" ] || fail "mandoc -T lint -W warning ${page#"$MQ_SRC"/}: $out"
  while IFS= read -r line; do
    [ -z "$line" ] || lint_ok "$line" || fail "mandoc -T lint -W style: $line"
  done < <(MANPATH=$MANDB:${MANPATH:-/usr/share/man} mandoc -T lint -W style "$page" 2>&1)
  grep -qx '\.Os mq [0-9.]*' "$page" || fail "${page#"$MQ_SRC"/}: .Os is not 'mq VERSION'"
  for s in NAME SYNOPSIS DESCRIPTION OPTIONS ENVIRONMENT FILES 'EXIT STATUS' EXAMPLES 'SEE ALSO'; do
    case $page in *.7) [ "$s" = OPTIONS ] || [ "$s" = SYNOPSIS ] && continue ;; esac
    grep -qx "\.Sh $s" "$page" || fail "${page#"$MQ_SRC"/} has no $s section"
  done
done

# ---------------------------------------------------------------------------
# (d) syntax of the completion files

for t in $TOOLS; do
  for f in "$COMP/bash/$t" "$COMP/zsh/_$t" "$COMP/fish/$t.fish"; do
    [ -f "$f" ] || fail "completion file ${f#"$MQ_SRC"/} is missing"
  done
  [ -f "$COMP/bash/$t" ] && { bash -n "$COMP/bash/$t" 2>"$T/err" || fail "bash -n completions/bash/$t: $(cat "$T/err")"; }
  if [ -f "$COMP/zsh/_$t" ]; then
    head -n 1 "$COMP/zsh/_$t" | grep -q "^#compdef $t\$" ||
      fail "completions/zsh/_$t does not start with '#compdef $t'"
  fi
done
if have zsh; then
  for t in $TOOLS; do
    [ -f "$COMP/zsh/_$t" ] && { zsh -n "$COMP/zsh/_$t" 2>"$T/err" || fail "zsh -n completions/zsh/_$t: $(cat "$T/err")"; }
  done
else
  echo "test_docs: zsh is not installed: zsh completions not checked by zsh" >&2
fi
if have fish; then
  for t in $TOOLS; do
    [ -f "$COMP/fish/$t.fish" ] && { fish --no-execute "$COMP/fish/$t.fish" 2>"$T/err" || fail "fish --no-execute completions/fish/$t.fish: $(cat "$T/err")"; }
  done
else
  echo "test_docs: fish is not installed: fish completions not checked by fish" >&2
fi

# Whether zsh can be driven through a pseudo-terminal here: a probe completion
# of our own must come back before zsh's answers about our files are trusted.
ZSH_LIVE=
if have zsh; then
  mkdir -p "$T/zprobe"
  printf '%s\n' '#compdef mqprobe' "_arguments '--probe-option[probe]'" >"$T/zprobe/_mqprobe"
  if zsh_offers 'mqprobe --' "$T/zprobe" | grep -qx -- --probe-option; then
    ZSH_LIVE=1
  else
    echo "test_docs: zsh cannot be driven through a pseudo-terminal here: zsh completions checked statically only" >&2
  fi
fi

# ---------------------------------------------------------------------------
# (b) options: --help against the pages and the completions

# check_option TOOL COMMAND NAMES OFFERED_BASH OFFERED_FISH OFFERED_ZSH: all the
# checks of (b) for one option, whose names (-n,--count) are NAMES; COMMAND is
# empty for a tool's own options.
check_option() {
  local tool=$1 cmd=$2 names=$3 opt where page=$MAN/$1.1 src in_synopsis=
  where=$tool${cmd:+ $cmd}
  src=$T/src.txt
  if [ -z "$cmd" ]; then
    section "$page" OPTIONS >"$src"
  else
    command_block "$page" "$cmd" >"$src"
  fi
  rendered_section "$page" SYNOPSIS >"$T/synopsis.txt"
  for opt in ${names//,/ }; do
    has_token "$T/synopsis.txt" "$opt" && in_synopsis=1
  done
  [ -n "$in_synopsis" ] ||
    fail "${names//,/ or } of '$where --help' is not in the SYNOPSIS of man/$tool.1"
  for opt in ${names//,/ }; do
    check_name "$tool" "$cmd" "$opt" "$4" "$5" "$6"
  done
}

# check_name TOOL COMMAND OPTION OFFERED_BASH OFFERED_FISH OFFERED_ZSH: the checks
# of (b) for one name of an option, the man page source being in $T/src.txt.
check_name() {
  local tool=$1 cmd=$2 opt=$3 where=$1${2:+ $2} src=$T/src.txt
  man_item "$src" "$opt" ||
    fail "$opt of '$where --help' has no '.It Fl ${opt#-}' item in man/$tool.1${cmd:+ (under '.It Cm $cmd')}"

  local b=$COMP/bash/$tool z=$COMP/zsh/_$tool f=$COMP/fish/$tool.fish
  if [ -z "$cmd" ]; then
    [ -f "$b" ] && { has_token "$b" "$opt" || fail "$opt of '$where --help' is missing from completions/bash/$tool"; }
    [ -f "$z" ] && { has_token "$z" "$opt" || fail "$opt of '$where --help' is missing from completions/zsh/_$tool"; }
    [ -f "$f" ] && { fish_has "$f" "$opt" || fail "$opt of '$where --help' is missing from completions/fish/$tool.fish"; }
  else
    [ -f "$b" ] && { case_arm "$b" "$cmd" | has_token - "$opt" ||
      fail "$opt of '$where --help' is missing from the '$cmd)' branch of completions/bash/$tool"; }
    [ -f "$z" ] && { case_arm "$z" "$cmd" | has_token - "$opt" ||
      fail "$opt of '$where --help' is missing from the '($cmd)' branch of completions/zsh/_$tool"; }
    [ -f "$f" ] && { grep -E "^complete .*-n '[^']*[[:space:]]$cmd([[:space:]][^']*)?'" "$f" >"$T/fish-lines.txt"
      fish_has "$T/fish-lines.txt" "$opt" ||
        fail "$opt of '$where --help' is missing from the '$cmd' lines of completions/fish/$tool.fish"; }
  fi
  grep -qx -- "$opt" "$4" || fail "bash completion does not offer $opt for '$where -'"
  [ -n "$5" ] && { grep -qx -- "$opt" "$5" || fail "fish completion does not offer $opt for '$where -'"; }
  [ -n "$6" ] && { grep -qx -- "$opt" "$6" || fail "zsh completion does not offer $opt for '$where -'"; }
}

# offers TOOL WORD...: what each shell offers for "TOOL WORD... -" and
# "TOOL WORD... --", into $T/offer.bash, .fish and .zsh; sets OF_FISH, OF_ZSH to
# the files of the shells that answered.
offers() {
  local tool=$1 line
  shift
  line="$tool${*:+ $*}"
  { bash_offers "$COMP/bash/$tool" "$tool" "$@" -
    bash_offers "$COMP/bash/$tool" "$tool" "$@" --; } >"$T/offer.bash"
  OF_FISH= OF_ZSH=
  if have fish && [ -f "$COMP/fish/$tool.fish" ]; then
    { fish_offers "$COMP/fish/$tool.fish" "$line -"
      fish_offers "$COMP/fish/$tool.fish" "$line --"; } >"$T/offer.fish"
    OF_FISH=$T/offer.fish
  fi
  if [ -n "$ZSH_LIVE" ]; then
    { zsh_offers "$line -" "$COMP/zsh"
      zsh_offers "$line --" "$COMP/zsh"; } >"$T/offer.zsh"
    OF_ZSH=$T/offer.zsh
  fi
}

for t in $TOOLS; do
  opts=$(help_options "$t")
  [ -n "$opts" ] || { fail "'$t --help' printed no options"; continue; }
  offers "$t"
  for opt in $opts; do
    check_option "$t" "" "$opt" "$T/offer.bash" "$OF_FISH" "$OF_ZSH"
  done
done

# The commands that `mq-admin --help` lists.
ADMIN_COMMANDS=$(mq-admin --help | sed -n '/^Subcommands:/,$s/^  \([a-z][a-z-]*\) .*/\1/p')
[ -n "$ADMIN_COMMANDS" ] || fail "'mq-admin --help' lists no commands"
admin_common=$(help_options mq-admin)
for cmd in $ADMIN_COMMANDS; do
  opts=$(help_options mq-admin "$cmd")
  [ -n "$opts" ] || { fail "'mq-admin $cmd --help' printed no options"; continue; }
  grep -Eq "^\.It Cm $cmd( |\$)" "$MAN/mq-admin.1" || fail "man/mq-admin.1 has no '.It Cm $cmd' item"
  offers mq-admin "$cmd"
  for opt in $opts; do
    printf '%s\n' "$admin_common" | grep -qx -- "$opt" && continue
    check_option mq-admin "$cmd" "$opt" "$T/offer.bash" "$OF_FISH" "$OF_ZSH"
  done
done
# Every command is completed.
bash_offers "$COMP/bash/mq-admin" mq-admin "" >"$T/offer.bash"
for cmd in $ADMIN_COMMANDS; do
  grep -qx "$cmd" "$T/offer.bash" || fail "bash completion does not offer the command '$cmd' for 'mq-admin '"
  [ -f "$COMP/zsh/_mq-admin" ] && { grep -Eq "'$cmd:" "$COMP/zsh/_mq-admin" || fail "completions/zsh/_mq-admin does not list the command '$cmd'"; }
  [ -f "$COMP/fish/mq-admin.fish" ] && { grep -Eq -- "-a $cmd( |\$)" "$COMP/fish/mq-admin.fish" || fail "completions/fish/mq-admin.fish does not list the command '$cmd'"; }
done

# Queue names are completed from `mq-admin list` of the store on the line.
mq-admin --store "$T/qstore" init && mq-admin --store "$T/qstore" create docs-queue || fail "cannot make a store for the completion check"
bash_offers "$COMP/bash/mq-send" mq-send --store "$T/qstore" docs- | grep -qx docs-queue ||
  fail "bash completion of mq-send does not complete queue names of --store DIR"
bash_offers "$COMP/bash/mq-admin" mq-admin stat -s "$T/qstore" system | grep -qx 'system\\;deadletter' ||
  fail "bash completion of mq-admin does not complete (and quote) queue names of -s DIR"
if have fish; then
  fish_offers "$COMP/fish/mq-peek.fish" "mq-peek --store $T/qstore docs-" | grep -qx docs-queue ||
    fail "fish completion of mq-peek does not complete queue names of --store DIR"
fi
if [ -n "$ZSH_LIVE" ]; then
  zsh_offers "mq-receive --store $T/qstore docs-" "$COMP/zsh" | grep -qx docs-queue ||
    fail "zsh completion of mq-receive does not complete queue names of --store DIR"
fi

# ---------------------------------------------------------------------------
# (e) every JSON key is documented in mq(7)

mq-send --store "$T/qstore" docs-queue x && mq-peek --store "$T/qstore" --json docs-queue >"$T/json" ||
  fail "cannot print a message as JSON"
section "$MAN/mq.7" MESSAGES >"$T/messages.txt"
grep -Eo '[{,]"[a-z_0-9]+":' "$T/json" | tr -d '{,":' >"$T/json-keys.txt"
for key in $(cat "$T/json-keys.txt"); do
  grep -qx "\.It Va $key" "$T/messages.txt" ||
    fail "the JSON key '$key' of mq-peek --json is not an '.It Va $key' item of MESSAGES in man/mq.7"
done
# mq(7) says the keys come in the order it lists them.
sed -n 's/^\.It Va //p' "$T/messages.txt" | grep -Fxf "$T/json-keys.txt" >"$T/doc-keys.txt"
cmp -s "$T/json-keys.txt" "$T/doc-keys.txt" ||
  fail "MESSAGES in man/mq.7 lists the JSON keys in another order than mq-peek --json prints them"

# The keys of mq-watch's events: an Arrived event (docs-queue has a message) and
# an ArrivedError event (docs-empty has none), each against EVENTS in mq-watch(1).
section "$MAN/mq-watch.1" EVENTS >"$T/events.txt"
mq-admin --store "$T/qstore" create docs-empty || fail "cannot make a queue for the mq-watch check"
for q in docs-queue docs-empty; do
  mq-watch --store "$T/qstore" --json -t 0 "$q" >"$T/event.json"
  grep -Eo '[{,]"[a-z_0-9]+":' "$T/event.json" | tr -d '{,":' >"$T/event-keys.txt"
  [ -s "$T/event-keys.txt" ] || { fail "mq-watch --json -t 0 $q printed no event"; continue; }
  for key in $(cat "$T/event-keys.txt"); do
    grep -qx "\.It Va $key" "$T/events.txt" ||
      fail "the key '$key' of an mq-watch --json event is not an '.It Va $key' item of EVENTS in man/mq-watch.1"
  done
  sed -n 's/^\.It Va //p' "$T/events.txt" | grep -Fxf "$T/event-keys.txt" >"$T/doc-keys.txt"
  cmp -s "$T/event-keys.txt" "$T/doc-keys.txt" ||
    fail "EVENTS in man/mq-watch.1 lists the keys of an event of $q in another order than mq-watch --json prints them"
done

# ---------------------------------------------------------------------------
# (f) every MQ_* variable of an --exec command is documented in mq-receive(1)

section "$MAN/mq-receive.1" ENVIRONMENT >"$T/environment.txt"
mq-send --store "$T/qstore" docs-queue y &&
  mq-receive --store "$T/qstore" docs-queue --exec env >"$T/env.txt" ||
  fail "cannot run mq-receive --exec env"
sed -n 's/^\(MQ_[A-Z0-9_]*\)=.*/\1/p' "$T/env.txt" | sort -u >"$T/env-names.txt"
[ -s "$T/env-names.txt" ] || fail "the command of mq-receive --exec got no MQ_* variables"
for name in $(cat "$T/env-names.txt"); do
  grep -qx "\.It Ev $name" "$T/environment.txt" ||
    fail "$name, in the environment of an mq-receive --exec command, is not an '.It Ev $name' item of ENVIRONMENT in man/mq-receive.1"
done

# ---------------------------------------------------------------------------
# (c) the examples run

# examples PAGE: the example commands of PAGE, each as a record "STATUS<TAB>
# COMMAND" ended by a NUL byte (a command may span lines).
examples() {
  rendered_section "$1" EXAMPLES | awk '
    function flush() {
      if (cmd == "") return
      status = 0
      if (match(last, /[[:space:]]#[[:space:]]*exit[[:space:]]+[0-9]+([[:space:]]*:.*)?$/)) {
        s = substr(last, RSTART, RLENGTH)
        sub(/^[[:space:]]#[[:space:]]*exit[[:space:]]+/, "", s)
        sub(/[^0-9].*$/, "", s)
        status = s
      }
      printf "%s\t%s%c", status, cmd, 0
      cmd = ""
    }
    {
      line = $0
      sub(/^[[:space:]]+/, "", line)
      if (cmd != "" && substr(line, 1, 2) == "> ") {
        last = substr(line, 3)
        cmd = cmd "\n" last
        next
      }
      flush()
      if (substr(line, 1, 2) == "$ ") {
        cmd = substr(line, 3)
        last = cmd
      }
    }
    END { flush() }'
}

for page in $PAGES; do
  name=$(basename "$page")
  dir=$T/examples/$name
  mkdir -p "$dir/home"
  script=$dir.sh
  {
    echo 'set -o pipefail'
    echo '__fails=0'
    echo '__check() {'
    echo '  if [ "$2" != "$1" ]; then'
    echo "    printf 'FAIL: man/$name: example exited %s, expected %s: %s\n' \"\$2\" \"\$1\" \"\$3\" >&3"
    echo '    __fails=$((__fails + 1))'
    echo '  fi'
    echo '}'
  } >"$script"
  n=0
  while IFS= read -r -d '' record; do
    want=${record%%$'\t'*}
    cmd=${record#*$'\t'}
    printf '%s\n__check %s $? %q\n' "$cmd" "$want" "$cmd" >>"$script"
    n=$((n + 1))
  done < <(examples "$page")
  echo 'exit $__fails' >>"$script"
  case $name in
    mq-*.1) [ "$n" -gt 0 ] || fail "man/$name has no example commands ('\$ ' lines in EXAMPLES)" ;;
  esac
  [ "$n" -gt 0 ] || continue
  (
    cd "$dir" || exit 99
    export HOME=$dir/home MQ_STORE=$dir/store
    unset XDG_DATA_HOME
    timeout "$EXAMPLE_TIMEOUT" bash "$script" </dev/null >"$dir.log" 2>&1
  ) 3>&2
  rc=$?
  if [ "$rc" -ne 0 ]; then
    fail "man/$name: $rc example(s) failed (or the run timed out); their output ends with:
$(tail -n 15 "$dir.log")"
  fi
done

finish
