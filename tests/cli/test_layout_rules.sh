#!/bin/bash
# The library's shape (issue 22), checked on the source tree so that it stays true:
#  - every LMDB database has one owning module: only its owner names the database's handle
#    (the message table's six are private members of MessageTable, which the compiler
#    enforces; the others are Store::Impl members, checked here by name);
#  - the tools include only the public headers, never the store's internals;
#  - no file in cmd/ is over 400 lines, none in lib/ over 1,000;
#  - engines do not print or exit: nothing under lib/ writes to stdout/stderr by itself or
#    calls exit().
. "$(dirname "$0")/lib.sh"
cd "$MQ_SRC" || exit 1

# owner DB FILE...: only these files of lib/store/ use the database handle DB (as an argument
# of a transaction or cursor call, or through impl_->).
owner() {
  local db=$1
  shift
  local pat="((txn|t|w|\\*txn)(\\.|->)[A-Za-z]+\\((impl_->)?$db\\b|Cursor [a-z]+\\([^)]*, (impl_->)?$db\\)|impl_->$db\\b)"
  local f base ok
  for f in lib/store/*.cpp lib/store/*.hpp; do
    grep -Eq "$pat" "$f" || continue
    base=${f#lib/store/}
    ok=0
    for o in "$@"; do [ "$base" = "$o" ] && ok=1; done
    [ $ok = 1 ] || fail "$f uses the database $db, whose owner is $*"
  done
}
owner meta open.cpp
owner queues queues.cpp
owner queue_ids queues.cpp
owner cursors cursors.cpp
owner leases leases.cpp
owner dedup send.cpp
owner dedup_exp send.cpp
for db in convs conv_q groups conv_msgs group_sel conv_kept msg_types; do
  owner "$db" conversations.cpp
done
# (The message table's six are private members of MessageTable: the compiler keeps others
# out. That they stay private:)
sed -n '/^class MessageTable/,/^};/p' lib/store/message_table.hpp >"$T/mt"
grep -q '^ private:' "$T/mt" && sed -n '/^ private:/,$p' "$T/mt" | grep -q 'messages_' ||
  fail "MessageTable's database handles are not private"

# The tools include only public headers.
internal='store/(store_impl|schema|lmdb|message_table|filelock|waiter)\.hpp'
if grep -rEn "#include \"$internal\"" cmd >"$T/inc"; then
  fail "a tool includes a store internal: $(cat "$T/inc")"
fi

# File sizes.
for f in $(git ls-files 'cmd/*.cpp' 'cmd/*.hpp'); do
  n=$(wc -l <"$f")
  [ "$n" -le 400 ] || fail "$f has $n lines (cmd/: at most 400)"
done
for f in $(git ls-files 'lib/*.cpp' 'lib/*.hpp'); do
  n=$(wc -l <"$f")
  [ "$n" -le 1000 ] || fail "$f has $n lines (lib/: at most 1000)"
done

# Engines never print or exit.
if git grep -nE '(^|[^_a-z:])(std::)?exit\(|\bstd::(cout|cerr)\b|\bf?printf\((stderr|stdout)?' \
  -- 'lib/*.cpp' 'lib/*.hpp' >"$T/print"; then
  fail "lib/ prints or exits: $(cat "$T/print")"
fi
finish
