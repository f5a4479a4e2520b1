// select.cpp: the selection options of mq-peek and mq-receive (common.hpp), and what they
// select: a Selection, ReadOptions or CursorOptions for the store.
#include "common.hpp"

#include <fmt/format.h>

#include "base/ids.hpp"

namespace mq::cli {

void AddSelectOptions(CLI::App& app, SelectArgs& a, bool receive, OptionScan& scan) {
  CLI::Option *n = nullptr, *all = nullptr, *top = nullptr, *lookup = nullptr, *first = nullptr,
              *last = nullptr, *next = nullptr, *prev = nullptr, *current = nullptr, *id = nullptr,
              *corr = nullptr, *cursor = nullptr;
  if (scan.Wants("-n,--count"))
    n = app.add_option("-n,--count", a.count, "Take up to N messages (default 1)")
            ->type_name("N")
            ->check(WholeNumber(1, kNoLimit));
  if (scan.Wants("--all")) all = app.add_flag("--all", a.all, "Take every qualifying message");
  if (scan.Wants("--top"))
    top = app.add_option("--top", a.top, "Service Broker TOP(N): at most N messages")
              ->type_name("N")
              ->check(WholeNumber(1, kNoLimit));
  Excludes(n, {all, top});
  Excludes(all, {top});
  if (scan.Wants("--lookup-id"))
    lookup = app.add_option_function<uint64_t>(
                    "--lookup-id",
                    [&a](const uint64_t& v) {
                      a.lookup_id = v;
                      a.lookup_given = true;
                    },
                    "Start at the message with this lookup id (PeekByLookupId; ignored "
                    "with --first or --last, as MSMQ's PEEK_FIRST and PEEK_LAST)")
                 ->type_name("N")
                 ->check(WholeNumber(0, kNoLimit));
  if (scan.Wants("--first"))
    first = app.add_flag("--first", a.first,
                         receive ? "From the first message of the queue"
                                 : "From the first message of the queue (with --cursor: "
                                   "move the cursor to it)");
  if (scan.Wants("--last"))
    last = app.add_flag("--last", a.last, "From the last message, backwards");
  if (scan.Wants("--next"))
    next = app.add_flag("--next", a.next,
                        receive ? "The message(s) after --lookup-id"
                                : "The message(s) after --lookup-id (with --cursor: "
                                  "advance the cursor)");
  if (scan.Wants("--prev"))
    prev = app.add_flag("--prev", a.prev, "The message(s) before --lookup-id, backwards");
  if (scan.Wants("--current"))
    current = app.add_flag("--current", a.current, "With --cursor: the message at the cursor");
  Excludes(first, {last, next, prev, current});
  Excludes(last, {next, prev, current});
  Excludes(next, {prev, current});
  Excludes(prev, {current});
  if (scan.Wants("--id"))
    id = app.add_option("--id", a.id, "The message with this id")
             ->type_name("MSGID")
             ->check(NotEmpty());
  if (scan.Wants("--correlation"))
    corr = app.add_option("--correlation", a.correlation,
                          "Messages with this correlation id (40 hex digits or a message id)")
               ->type_name("ID")
               ->check(NotEmpty());
  Excludes(id, {corr, lookup, first, last});
  Excludes(corr, {lookup, first, last});
  if (scan.Wants("--cursor"))
    cursor = app.add_option("--cursor", a.cursor,
                            receive ? "Receive the message at this named cursor (--current)"
                                    : "Use this named cursor, kept in the store, with "
                                      "--first, --current or --next")
                 ->type_name("NAME");
  Excludes(cursor, {lookup, id, corr, last, prev, all, top, n});
  if (scan.Wants("--no-wait-lock"))
    app.add_flag("--no-wait-lock", a.no_wait_lock,
                 "With --cursor: fail (exit 5) instead of waiting when another process is using "
                 "the cursor");
  if (!receive && scan.Wants("--locked"))
    app.add_flag("--locked", a.locked,
                 "Also show messages Locked by an open transactional receive "
                 "(AllowPeekWhenLocked)");
  if (scan.Wants("-w,--wait,-t,--timeout"))
    AddWaitOption(app, a.wait,
                  "Wait for a qualifying message, up to DURATION (default: infinite; 0: look "
                  "once)");
}

Result<Selection> MakeSelection(const SelectArgs& a) {
  Selection s;
  s.limit = a.all ? 0 : a.top ? a.top : a.count;
  if ((a.next || a.prev) && !a.lookup_given && a.cursor.empty())
    return Status::InvalidArg("--next and --prev need --lookup-id (or --cursor)");
  if (a.current && a.cursor.empty()) return Status::InvalidArg("--current needs --cursor");
  if (a.no_wait_lock && a.cursor.empty())
    return Status::InvalidArg("--no-wait-lock applies to --cursor");
  if (a.locked && !a.cursor.empty())
    return Status::InvalidArg("--locked applies to plain peeks; a cursor skips Locked messages");
  s.include_locked = a.locked;
  // With --first or --last the lookup id is ignored (MQ_LOOKUP_PEEK_FIRST / _LAST).
  if (a.next) s.anchor = Anchor::kAfter;
  else if (a.prev) s.anchor = Anchor::kBefore;
  else if (a.last) s.anchor = Anchor::kLast;
  else if (a.first) s.anchor = Anchor::kHead;
  else if (a.lookup_given) s.anchor = Anchor::kAt;
  if (s.anchor == Anchor::kAt || s.anchor == Anchor::kAfter || s.anchor == Anchor::kBefore) {
    if (a.lookup_id == 0 && a.cursor.empty())
      return Status::InvalidArg(
          "--lookup-id must be a positive number (0 only with --first or --last)");
    s.lookup_id = a.lookup_id;
  }
  if (!a.id.empty()) {
    auto id = ParseMessageId(a.id);
    if (!id)
      return Status::InvalidArg(fmt::format("invalid message id '{}': expected {{GUID}}\\N", a.id));
    s.anchor = Anchor::kId;
    s.id = *id;
    s.limit = 1;
  }
  if (!a.correlation.empty()) {
    auto c = ParseCorrelationId(a.correlation);
    if (!c.ok()) return c.status();
    s.anchor = Anchor::kCorrelation;
    s.correlation = *c;
  }
  return s;
}

Result<ReadOptions> MakeReadOptions(const SelectArgs& a) {
  ReadOptions ro;
  auto w = ParseWait(a.wait);
  if (!w.ok()) return w.status();
  ro.wait_ms = *w;
  return ro;
}

Result<CursorOptions> MakeCursorOptions(const SelectArgs& a, bool receive) {
  CursorOptions co;
  co.name = a.cursor;
  co.wait_lock = !a.no_wait_lock;
  // No --wait: wait for the cursor's lock as long as it takes; --wait D: at most D.
  if (!a.wait.empty()) {
    auto w = ParseWait(a.wait);
    if (w.ok()) co.lock_wait_ms = *w < 0 ? -1 : *w;
  }
  MQ_RETURN_IF_ERROR(CheckCursorName(a.cursor));
  int actions = a.first + a.current + a.next;
  if (receive) {
    if (!a.current || actions != 1)
      return Status::InvalidArg("a receive at a cursor takes --current");
    if (!a.wait.empty())
      return Status::InvalidArg(
          "--wait does not apply to a receive at a cursor: the message is there or "
          "not");
  } else if (actions != 1) {
    return Status::InvalidArg("--cursor needs one of --first, --current, --next");
  }
  co.action = a.first ? CursorAction::kFirst
              : a.next ? CursorAction::kNext
                       : CursorAction::kCurrent;
  return co;
}

}  // namespace mq::cli
