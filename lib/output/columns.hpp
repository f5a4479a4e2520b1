// columns.hpp: Service Broker's <column_specifier> for mq-peek and mq-receive: a list of
// queue columns (REFERENCE.md 3.1) printed as rows of TSV, CSV or JSON.
//
// Columns, in the order of `*`: status, priority, queuing_order, conversation_group_id,
// conversation_handle, message_sequence_number, service_name, service_contract_name,
// message_type_name, validation, message_body, message_id, message_enqueue_time. The object
// ids service_id, service_contract_id and message_type_id have no source in mq (it keeps no
// catalog of services, contracts or message types) and are refused by name with a remedy.
// Outside `*`, by name only: lookup_id, delivery_count, queue, label (mq's own properties).
//
// Values are those of the JSON form (format.hpp): GUIDs lowercase without braces, times
// RFC 3339 UTC, message_id the mq message id ({GUID}\N). Absent values (nil GUIDs, empty
// names, no time) are NULL.
//
// TSV (PostgreSQL COPY text format): fields separated by TAB, rows end with LF; NULL is \N;
// in a value, backslash, TAB, LF and CR are written \\ \t \n \r, other control bytes
// (0x00-0x1F, 0x7F) \xHH, and so is every byte 0x80-0xFF of a value that is not valid UTF-8.
// No value can contain a raw TAB or LF, so every row is one line.
//
// CSV (RFC 4180): fields separated by commas, rows end with CRLF; a field that is empty or
// holds a comma, a double quote, CR or LF is quoted, quotes doubled. NULL is an empty
// unquoted field (so that it differs from an empty string, ""). message_body is written as
// text when it is valid UTF-8 without NUL and does not start with "\x"; otherwise as "\x"
// followed by two lowercase hex digits per byte (PostgreSQL's bytea hex form).
//
// JSON: one object per row, with exactly the listed keys in the listed order (so a column may
// be named only once, unless an alias renames it). message_body is a string when the body is
// valid UTF-8, else an object {"base64": "..."}; NULL is null; numbers are numbers.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/message.hpp"
#include "base/status.hpp"

namespace mq {

enum class RowFormat { kTsv, kCsv, kJson };

// The columns of `*`, in order.
const std::vector<std::string_view>& StarColumns();
// Every name that Parse accepts (StarColumns, then mq's own extras).
const std::vector<std::string_view>& KnownColumns();

class ColumnList {
 public:
  // Parses a comma-separated list of column names, `*` (which stands for StarColumns) and
  // `alias=name` (SQL's `column_alias = column`: the row calls the column `alias`; letters,
  // digits and _). Names may repeat, as in SQL, except for JSON (an object cannot repeat a
  // key). An unknown or empty name is E_INVALIDARG naming it.
  static Result<ColumnList> Parse(std::string_view spec, RowFormat format);

  // The columns, and what the header and JSON call them (the alias, else the name).
  const std::vector<std::string>& names() const { return names_; }
  const std::vector<std::string>& labels() const { return labels_; }
  // The header line (column names) for TSV and CSV, with its line end.
  std::string Header() const;
  // One row for `m`, with its line end.
  std::string Row(const Message& m) const;

 private:
  std::vector<std::string> names_;
  std::vector<std::string> labels_;
  RowFormat format_ = RowFormat::kTsv;
};

// The field encodings above, for tests and for whoever reads the rows back.
std::string TsvEscape(std::string_view value);
std::string CsvQuote(std::string_view value);
std::string CsvBody(std::string_view body);

}  // namespace mq
