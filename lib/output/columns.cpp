// columns.cpp: Service Broker queue columns as TSV, CSV and JSON rows (columns.hpp).
#include "output/columns.hpp"

#include <algorithm>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/codec.hpp"
#include "output/format.hpp"

namespace mq {

using json = nlohmann::ordered_json;

namespace {

constexpr std::string_view kBody = "message_body";

// Columns of REFERENCE.md 3.1 with no counterpart in the message model, and the column that
// names the same object.
struct ObjectId {
  std::string_view id, name;
};
constexpr ObjectId kObjectIds[] = {{"service_id", "service_name"},
                                   {"service_contract_id", "service_contract_name"},
                                   {"message_type_id", "message_type_name"}};

// The key of the JSON form (format.hpp) that holds a column's value; the JSON form is the one
// place that turns properties into text, so rows and --json never disagree.
std::string_view JsonKey(std::string_view column) {
  if (column == "message_id") return "id";
  return column;
}

}  // namespace

const std::vector<std::string_view>& StarColumns() {
  static const std::vector<std::string_view> kStar = {
      "status",
      "priority",
      "queuing_order",
      "conversation_group_id",
      "conversation_handle",
      "message_sequence_number",
      "service_name",
      "service_contract_name",
      "message_type_name",
      "validation",
      "message_body",
      "message_id",
      "message_enqueue_time",
  };
  return kStar;
}

const std::vector<std::string_view>& KnownColumns() {
  static const std::vector<std::string_view> kKnown = [] {
    std::vector<std::string_view> k = StarColumns();
    for (std::string_view extra :
         {"lookup_id", "delivery_count", "queue", "label", "abort_count", "last_failure",
          "last_exit_status", "last_signal", "last_stderr", "last_failure_time"})
      k.push_back(extra);
    return k;
  }();
  return kKnown;
}

Result<ColumnList> ColumnList::Parse(std::string_view spec, RowFormat format) {
  ColumnList list;
  list.format_ = format;
  const auto& known = KnownColumns();
  size_t start = 0;
  while (true) {
    size_t comma = spec.find(',', start);
    std::string_view item = spec.substr(start, comma == std::string_view::npos
                                                   ? std::string_view::npos
                                                   : comma - start);
    // SQL's `column_alias = column`.
    std::string_view alias, name = item;
    if (size_t eq = item.find('='); eq != std::string_view::npos) {
      alias = item.substr(0, eq);
      name = item.substr(eq + 1);
      bool word = !alias.empty() && std::all_of(alias.begin(), alias.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
               c == '_';
      });
      if (!word)
        return Status::InvalidArg(
            fmt::format("--columns: bad alias in '{}': letters, digits and _ only", item));
      if (name == "*") return Status::InvalidArg("--columns: '*' cannot take an alias");
    }
    if (name == "*") {
      for (std::string_view c : StarColumns()) {
        list.names_.emplace_back(c);
        list.labels_.emplace_back(c);
      }
    } else if (std::find(known.begin(), known.end(), name) != known.end()) {
      list.names_.emplace_back(name);
      list.labels_.emplace_back(alias.empty() ? name : alias);
    } else if (auto id = std::find_if(std::begin(kObjectIds), std::end(kObjectIds),
                                      [&](const ObjectId& o) { return o.id == name; });
               id != std::end(kObjectIds)) {
      return Status::InvalidArg(
          fmt::format("column '{}' has no source in mq (it keeps no catalog of "
                      "object ids): use {}",
                      name, id->name));
    } else if (name.empty()) {
      return Status::InvalidArg("--columns: empty column name");
    } else {
      return Status::InvalidArg(
          fmt::format("unknown column '{}' (columns: *, {})", name, fmt::join(known, ", ")));
    }
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  if (format == RowFormat::kJson) {
    for (size_t i = 0; i < list.labels_.size(); ++i)
      for (size_t k = 0; k < i; ++k)
        if (list.labels_[k] == list.labels_[i])
          return Status::InvalidArg(
              fmt::format("column '{}' named twice: a JSON object cannot repeat "
                          "a key (tsv and csv can; an alias can rename one)",
                          list.labels_[i]));
  }
  return list;
}

std::string ColumnList::Header() const {
  if (format_ == RowFormat::kJson) return {};
  return fmt::format("{}{}", fmt::join(labels_, format_ == RowFormat::kTsv ? "\t" : ","),
                     format_ == RowFormat::kTsv ? "\n" : "\r\n");
}

std::string ColumnList::Row(const Message& m) const {
  const json full = MessageToJson(m);
  if (format_ == RowFormat::kJson) {
    json row = json::object();
    for (size_t i = 0; i < names_.size(); ++i) {
      const std::string& c = names_[i];
      if (c == kBody) {
        row[labels_[i]] = IsValidUtf8(m.body) ? json(m.body)
                                              : json({{"base64", Base64Encode(m.body)}});
      } else {
        row[labels_[i]] = full.at(std::string(JsonKey(c)));
      }
    }
    return row.dump() + "\n";
  }
  bool tsv = format_ == RowFormat::kTsv;
  std::string out;
  for (size_t i = 0; i < names_.size(); ++i) {
    if (i) out += tsv ? '\t' : ',';
    const std::string& c = names_[i];
    if (c == kBody) {
      out += tsv ? TsvEscape(m.body) : CsvBody(m.body);
      continue;
    }
    const json& v = full.at(std::string(JsonKey(c)));
    if (v.is_null()) {
      if (tsv) out += "\\N";
    } else {
      std::string text = v.is_string() ? v.get<std::string>() : v.dump();
      out += tsv ? TsvEscape(text) : CsvQuote(text);
    }
  }
  out += tsv ? "\n" : "\r\n";
  return out;
}

std::string TsvEscape(std::string_view value) {
  const bool utf8 = IsValidUtf8(value);
  std::string out;
  out.reserve(value.size());
  for (char ch : value) {
    auto b = static_cast<unsigned char>(ch);
    switch (ch) {
      case '\\': out += "\\\\"; break;
      case '\t': out += "\\t"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      default:
        if (b < 0x20 || b == 0x7F || (b >= 0x80 && !utf8))
          out += fmt::format("\\x{:02x}", b);
        else
          out += ch;
    }
  }
  return out;
}

std::string CsvQuote(std::string_view value) {
  if (!value.empty() && value.find_first_of(",\"\r\n") == std::string_view::npos)
    return std::string(value);
  std::string out = "\"";
  for (char ch : value) {
    if (ch == '"') out += '"';
    out += ch;
  }
  out += '"';
  return out;
}

std::string CsvBody(std::string_view body) {
  bool text = IsValidUtf8(body) && body.find('\0') == std::string_view::npos &&
              body.substr(0, 2) != "\\x";
  if (text) return CsvQuote(body);
  return "\\x" + HexEncode(body);
}

}  // namespace mq
