// format.cpp: JSON and template forms of messages; the output writer.
#include "output/format.hpp"

#include <fcntl.h>
#include <linux/sockios.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <set>

#include <fmt/format.h>

#include "base/codec.hpp"
#include "base/fd.hpp"
#include "base/ids.hpp"
#include "base/units.hpp"

namespace mq {

using json = nlohmann::ordered_json;

namespace {

json TimeOrNull(int64_t ms) { return ms ? json(FormatTime(ms)) : json(nullptr); }
json GuidOrNull(const Guid& g) { return IsNil(g) ? json(nullptr) : json(FormatGuid(g)); }
json StrOrNull(const std::string& s) { return s.empty() ? json(nullptr) : json(s); }

}  // namespace

json MessageToJson(const Message& m) {
  json j;
  j["id"] = FormatMessageId(m.id);
  j["lookup_id"] = m.lookup_id;
  j["queue"] = m.queue;
  j["class"] = ClassName(m.msg_class);
  j["class_value"] = m.msg_class;
  j["priority"] = m.priority;
  j["label"] = m.label;  // always UTF-8: Append refuses anything else
  // A VARTYPE number where MSMQ has one; json and xml, which have none, by name.
  if (m.body_type == kBodyJson || m.body_type == kBodyXml)
    j["body_type"] = BodyTypeName(m.body_type);
  else
    j["body_type"] = m.body_type;
  j["body_type_name"] = BodyTypeName(m.body_type);
  j["correlation_id"] = m.correlation_id.empty() ? json(nullptr)
                                                 : json(FormatCorrelationId(m.correlation_id));
  j["app_specific"] = m.app_specific;
  j["journal"] = m.journal;
  j["deadletter"] = m.deadletter;
  j["ack"] = AckLevelName(m.ack);
  j["ack_value"] = m.ack;
  j["admin_queue"] = StrOrNull(m.admin_queue);
  j["response_queue"] = StrOrNull(m.response_queue);
  j["destination_queue"] = StrOrNull(m.destination_queue);
  j["sent_time"] = TimeOrNull(m.sent_time);
  j["arrived_time"] = TimeOrNull(m.arrived_time);
  j["ttrq"] = TimeOrNull(m.ttrq);
  j["ttbr"] = TimeOrNull(m.ttbr);
  j["visible_time"] = TimeOrNull(m.visible_time);
  j["source_qm_guid"] = GuidOrNull(m.source_qm_guid);
  j["hash_algorithm"] = m.hash_algorithm;
  j["provider_type"] = m.provider_type;
  j["provider_name"] = StrOrNull(m.provider_name);
  j["connector_id"] = GuidOrNull(m.connector_id);
  j["eod_first"] = m.eod_first;
  j["eod_last"] = m.eod_last;
  j["xact_id"] = m.xact_id.empty() ? json(nullptr) : json(HexEncode(m.xact_id));
  j["tx_sequence_id"] = m.tx_sequence_id;
  j["tx_sequence_number"] = m.tx_sequence_number;
  j["tx_previous_sequence_number"] = m.tx_previous_sequence_number;
  j["delivery"] = m.express ? "express" : "recoverable";
  j["extension_base64"] = m.extension.empty() ? json(nullptr) : json(Base64Encode(m.extension));
  // The extension as the body is shown: text when it is UTF-8, else base64.
  if (m.extension.empty()) {
    j["extension"] = nullptr;
    j["extension_encoding"] = nullptr;
  } else if (IsValidUtf8(m.extension)) {
    j["extension"] = m.extension;
    j["extension_encoding"] = "utf-8";
  } else {
    j["extension"] = Base64Encode(m.extension);
    j["extension_encoding"] = "base64";
  }
  j["abort_count"] = m.abort_count;
  j["move_count"] = m.move_count;
  j["last_move_time"] = TimeOrNull(m.last_move_time);
  j["conversation_handle"] = GuidOrNull(m.conversation_handle);
  j["conversation_group_id"] = GuidOrNull(m.conversation_group_id);
  j["message_sequence_number"] = m.message_sequence_number;
  j["service_name"] = StrOrNull(m.service_name);
  j["service_contract_name"] = StrOrNull(m.service_contract_name);
  j["message_type_name"] = StrOrNull(m.message_type_name);
  j["validation"] = std::string(1, m.validation);
  j["status"] = m.status;
  j["queuing_order"] = m.queuing_order;
  j["message_enqueue_time"] = TimeOrNull(m.message_enqueue_time);
  j["delivery_count"] = m.delivery_count;
  j["last_failure"] = StrOrNull(m.last_failure);
  j["last_exit_status"] =
      m.last_exit_status >= 0 ? json(static_cast<uint32_t>(m.last_exit_status)) : json(nullptr);
  j["last_signal"] = m.last_signal > 0 ? json(static_cast<uint32_t>(m.last_signal)) : json(nullptr);
  j["last_stderr"] = m.last_stderr.empty() ? json(nullptr) : json(ToValidUtf8(m.last_stderr));
  j["last_failure_time"] = TimeOrNull(m.last_failure_time);
  j["body_size"] = m.body.size();
  if (IsValidUtf8(m.body)) {
    j["body"] = m.body;
    j["body_encoding"] = "utf-8";
  } else {
    j["body"] = Base64Encode(m.body);
    j["body_encoding"] = "base64";
  }
  return j;
}

std::string MessageToJsonLine(const Message& m) { return MessageToJson(m).dump() + "\n"; }

namespace {

Status BadField(const char* key, const std::string& why) {
  return Status::InvalidArg(fmt::format("field '{}': {}", key, why));
}

template <typename T>
Status GetUint(const json& j, const char* key, T& out, uint64_t max) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return {};
  if (!it->is_number_unsigned() || it->get<uint64_t>() > max)
    return BadField(key, fmt::format("expected an integer 0..{}", max));
  out = static_cast<T>(it->get<uint64_t>());
  return {};
}

Status GetBool(const json& j, const char* key, bool& out) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return {};
  if (!it->is_boolean()) return BadField(key, "expected true or false");
  out = it->get<bool>();
  return {};
}

Status GetString(const json& j, const char* key, std::string& out) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return {};
  if (!it->is_string()) return BadField(key, "expected a string");
  out = it->get<std::string>();
  return {};
}

Status GetTime(const json& j, const char* key, int64_t& out) {
  std::string s;
  MQ_RETURN_IF_ERROR(GetString(j, key, s));
  if (s.empty()) return {};
  auto t = ParseTime(s);
  if (!t.ok()) return BadField(key, t.status().text());
  out = *t;
  return {};
}

Status GetGuid(const json& j, const char* key, Guid& out) {
  std::string s;
  MQ_RETURN_IF_ERROR(GetString(j, key, s));
  if (s.empty()) return {};
  auto g = ParseGuid(s);
  if (!g) return BadField(key, "expected a GUID");
  out = *g;
  return {};
}

Status GetBase64(const json& j, const char* key, std::string& out) {
  std::string s;
  MQ_RETURN_IF_ERROR(GetString(j, key, s));
  auto d = Base64Decode(s);
  if (!d) return BadField(key, "invalid base64");
  out = *d;
  return {};
}

}  // namespace

Result<Message> MessageFromJson(const json& j) {
  if (!j.is_object()) return Status::InvalidArg("expected a JSON object");
  Message m;
  std::string s;
  MQ_RETURN_IF_ERROR(GetString(j, "id", s));
  if (!s.empty()) {
    auto id = ParseMessageId(s);
    if (!id) return BadField("id", "expected {GUID}\\N");
    m.id = *id;
  }
  MQ_RETURN_IF_ERROR(GetUint(j, "class_value", m.msg_class, 0xFFFF));
  if (!j.contains("class_value") && j.contains("class") && j["class"].is_string()) {
    auto c = ClassFromName(j["class"].get<std::string>());
    if (!c) return BadField("class", "unknown class");
    m.msg_class = *c;
  }
  MQ_RETURN_IF_ERROR(GetUint(j, "priority", m.priority, 7));
  MQ_RETURN_IF_ERROR(GetString(j, "label", m.label));
  if (auto bt = j.find("body_type"); bt != j.end() && bt->is_string()) {
    auto v = ParseBodyType(bt->get<std::string>());
    if (!v.ok()) return BadField("body_type", v.status().text());
    m.body_type = *v;
  } else {
    MQ_RETURN_IF_ERROR(GetUint(j, "body_type", m.body_type, UINT32_MAX));
  }
  s.clear();
  MQ_RETURN_IF_ERROR(GetString(j, "correlation_id", s));
  if (!s.empty()) {
    auto c = ParseCorrelationId(s);
    if (!c.ok()) return BadField("correlation_id", c.status().text());
    m.correlation_id = *c;
  }
  MQ_RETURN_IF_ERROR(GetUint(j, "app_specific", m.app_specific, UINT32_MAX));
  MQ_RETURN_IF_ERROR(GetBool(j, "journal", m.journal));
  MQ_RETURN_IF_ERROR(GetBool(j, "deadletter", m.deadletter));
  MQ_RETURN_IF_ERROR(GetUint(j, "ack_value", m.ack, 0x0F));
  MQ_RETURN_IF_ERROR(GetString(j, "admin_queue", m.admin_queue));
  MQ_RETURN_IF_ERROR(GetString(j, "response_queue", m.response_queue));
  MQ_RETURN_IF_ERROR(GetString(j, "destination_queue", m.destination_queue));
  MQ_RETURN_IF_ERROR(GetTime(j, "sent_time", m.sent_time));
  MQ_RETURN_IF_ERROR(GetTime(j, "arrived_time", m.arrived_time));
  MQ_RETURN_IF_ERROR(GetTime(j, "ttrq", m.ttrq));
  MQ_RETURN_IF_ERROR(GetTime(j, "ttbr", m.ttbr));
  MQ_RETURN_IF_ERROR(GetTime(j, "visible_time", m.visible_time));
  MQ_RETURN_IF_ERROR(GetGuid(j, "source_qm_guid", m.source_qm_guid));
  MQ_RETURN_IF_ERROR(GetUint(j, "hash_algorithm", m.hash_algorithm, UINT32_MAX));
  MQ_RETURN_IF_ERROR(GetUint(j, "provider_type", m.provider_type, UINT32_MAX));
  MQ_RETURN_IF_ERROR(GetString(j, "provider_name", m.provider_name));
  MQ_RETURN_IF_ERROR(GetGuid(j, "connector_id", m.connector_id));
  MQ_RETURN_IF_ERROR(GetBool(j, "eod_first", m.eod_first));
  MQ_RETURN_IF_ERROR(GetBool(j, "eod_last", m.eod_last));
  s.clear();
  MQ_RETURN_IF_ERROR(GetString(j, "xact_id", s));
  if (!s.empty()) {
    auto x = HexDecode(s);
    if (!x || x->size() != kIdSize) return BadField("xact_id", "expected 40 hex digits");
    m.xact_id = *x;
  }
  MQ_RETURN_IF_ERROR(GetUint(j, "tx_sequence_id", m.tx_sequence_id, UINT64_MAX));
  MQ_RETURN_IF_ERROR(GetUint(j, "tx_sequence_number", m.tx_sequence_number, UINT32_MAX));
  MQ_RETURN_IF_ERROR(
      GetUint(j, "tx_previous_sequence_number", m.tx_previous_sequence_number, UINT32_MAX));
  s.clear();
  MQ_RETURN_IF_ERROR(GetString(j, "delivery", s));
  if (!s.empty() && s != "express" && s != "recoverable")
    return BadField("delivery", "expected express or recoverable");
  m.express = s == "express";
  MQ_RETURN_IF_ERROR(GetBase64(j, "extension_base64", m.extension));
  if (m.extension.empty()) {
    // "extension" with its "extension_encoding", as "body" (a line written by hand may carry
    // only these).
    std::string ext_enc = "utf-8";
    MQ_RETURN_IF_ERROR(GetString(j, "extension_encoding", ext_enc));
    MQ_RETURN_IF_ERROR(GetString(j, "extension", m.extension));
    if (ext_enc == "base64") {
      auto d = Base64Decode(m.extension);
      if (!d) return BadField("extension", "invalid base64");
      m.extension = *d;
    } else if (ext_enc != "utf-8") {
      return BadField("extension_encoding", "expected utf-8 or base64");
    }
  }
  MQ_RETURN_IF_ERROR(GetUint(j, "abort_count", m.abort_count, UINT32_MAX));
  MQ_RETURN_IF_ERROR(GetUint(j, "move_count", m.move_count, UINT32_MAX));
  MQ_RETURN_IF_ERROR(GetTime(j, "last_move_time", m.last_move_time));
  MQ_RETURN_IF_ERROR(GetGuid(j, "conversation_handle", m.conversation_handle));
  MQ_RETURN_IF_ERROR(GetGuid(j, "conversation_group_id", m.conversation_group_id));
  MQ_RETURN_IF_ERROR(
      GetUint(j, "message_sequence_number", m.message_sequence_number, UINT64_MAX));
  MQ_RETURN_IF_ERROR(GetString(j, "service_name", m.service_name));
  MQ_RETURN_IF_ERROR(GetString(j, "service_contract_name", m.service_contract_name));
  MQ_RETURN_IF_ERROR(GetString(j, "message_type_name", m.message_type_name));
  s.clear();
  MQ_RETURN_IF_ERROR(GetString(j, "validation", s));
  if (!s.empty()) {
    if (s != "N" && s != "E" && s != "X") return BadField("validation", "expected N, E or X");
    m.validation = s[0];
  }
  MQ_RETURN_IF_ERROR(GetUint(j, "status", m.status, 3));
  MQ_RETURN_IF_ERROR(GetTime(j, "message_enqueue_time", m.message_enqueue_time));
  MQ_RETURN_IF_ERROR(GetUint(j, "delivery_count", m.delivery_count, UINT32_MAX));
  MQ_RETURN_IF_ERROR(GetString(j, "last_failure", m.last_failure));
  if (auto it = j.find("last_exit_status"); it != j.end() && !it->is_null()) {
    uint32_t v = 0;
    MQ_RETURN_IF_ERROR(GetUint(j, "last_exit_status", v, 255));
    m.last_exit_status = static_cast<int32_t>(v);
  }
  MQ_RETURN_IF_ERROR(GetUint(j, "last_signal", m.last_signal, 255));
  MQ_RETURN_IF_ERROR(GetString(j, "last_stderr", m.last_stderr));
  MQ_RETURN_IF_ERROR(GetTime(j, "last_failure_time", m.last_failure_time));
  std::string enc = "utf-8";
  MQ_RETURN_IF_ERROR(GetString(j, "body_encoding", enc));
  MQ_RETURN_IF_ERROR(GetString(j, "body", m.body));
  if (enc == "base64") {
    auto d = Base64Decode(m.body);
    if (!d) return BadField("body", "invalid base64");
    m.body = *d;
  } else if (enc != "utf-8") {
    return BadField("body_encoding", "expected utf-8 or base64");
  }
  return m;
}

Result<Template> Template::Parse(std::string_view text) {
  static const std::set<std::string> kFields = [] {
    std::set<std::string> f;
    const json j = MessageToJson(Message());
    for (auto it = j.cbegin(); it != j.cend(); ++it) f.insert(it.key());
    return f;
  }();
  Template t;
  std::string lit;
  auto flush = [&] {
    if (!lit.empty()) t.parts_.push_back({false, std::move(lit)});
    lit.clear();
  };
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '\\' && i + 1 < text.size()) {
      char e = text[++i];
      switch (e) {
        case 'n': lit += '\n'; break;
        case 't': lit += '\t'; break;
        case '0': lit += '\0'; break;
        case '\\': lit += '\\'; break;
        default: lit += '\\'; lit += e; break;
      }
    } else if (c == '{' && i + 1 < text.size() && text[i + 1] == '{') {
      lit += '{';
      ++i;
    } else if (c == '}' && i + 1 < text.size() && text[i + 1] == '}') {
      lit += '}';
      ++i;
    } else if (c == '{') {
      auto end = text.find('}', i);
      if (end == std::string_view::npos) return Status::InvalidArg("template: '{' without '}'");
      std::string name(text.substr(i + 1, end - i - 1));
      if (!kFields.count(name))
        return Status::InvalidArg(fmt::format("template: unknown field {{{}}}", name));
      flush();
      t.parts_.push_back({true, name});
      i = end;
    } else {
      lit += c;
    }
  }
  flush();
  return t;
}

std::string Template::Render(const Message& m) const {
  std::string out;
  json j;
  bool have_json = false;
  for (const Part& p : parts_) {
    if (!p.field) {
      out += p.text;
    } else if (p.text == "body") {
      out += m.body;  // raw bytes, unlike the JSON form
    } else {
      if (!have_json) {
        j = MessageToJson(m);
        have_json = true;
      }
      const json& v = j[p.text];
      if (v.is_string()) out += v.get<std::string>();
      else if (!v.is_null()) out += v.dump();
    }
  }
  return out;
}

Status FdWriter::Flush() {
  Status s = WriteAll(fd_, buf_, name_);
  buf_.clear();
  return s;
}

Status FdWriter::WaitTaken() {
  if (kind_ < 0) {
    struct stat st;
    kind_ = ::fstat(fd_, &st) != 0 ? 0 : S_ISFIFO(st.st_mode) ? 1 : S_ISSOCK(st.st_mode) ? 2 : 0;
  }
  if (kind_ == 0) return {};
  Status gone = Status::BrokenPipe("the reader went away before it read everything", name_);
  long pause_ns = 50'000;
  for (;;) {
    int unread = 0;
    if (::ioctl(fd_, kind_ == 1 ? FIONREAD : SIOCOUTQ, &unread) != 0) return {};  // can't tell
    if (unread == 0) return {};
    // Events 0: only POLLERR/POLLHUP (the reader closed its end) end the pause early.
    struct pollfd p = {fd_, 0, 0};
    struct timespec ts = {0, pause_ns};
    int n = ::ppoll(&p, 1, &ts, nullptr);
    if (n < 0 && errno != EINTR) return ErrnoStatus(errno, name_, "poll failed");
    if (n > 0 && (p.revents & (POLLERR | POLLHUP | POLLNVAL))) return gone;
    pause_ns = std::min<long>(pause_ns * 2, 10'000'000);
  }
}

Result<std::unique_ptr<FileAppender>> FileAppender::Open(const std::string& path) {
  constexpr int kFlags = O_WRONLY | O_APPEND | O_CLOEXEC;
  bool created = true;
  int fd = ::open(path.c_str(), kFlags | O_CREAT | O_EXCL, 0666);
  if (fd < 0 && errno == EEXIST) {
    created = false;
    fd = ::open(path.c_str(), kFlags | O_CREAT, 0666);
  }
  if (fd < 0) return ErrnoStatus(errno, path, "cannot open for appending");
  std::unique_ptr<FileAppender> f(new FileAppender(fd, path));
  if (created) {
    // The new name must survive a power loss as the rows synced into it will: sync the
    // directory that holds it, once, before any row depends on it.
    auto slash = path.rfind('/');
    std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
    int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0) return ErrnoStatus(errno, dir, "cannot open the directory of --into");
    int rc = ::fsync(dfd);
    int err = errno;
    ::close(dfd);
    if (rc != 0) return ErrnoStatus(err, dir, "fsync failed");
  }
  return f;
}

FileAppender::~FileAppender() { ::close(fd_); }

Status FileAppender::Append(std::string_view data, std::string_view prefix_if_empty) {
  while (::flock(fd_, LOCK_EX) != 0)
    if (errno != EINTR) return ErrnoStatus(errno, path_, "cannot lock");
  struct stat st {};
  if (::fstat(fd_, &st) != 0) {
    int err = errno;
    ::flock(fd_, LOCK_UN);
    return ErrnoStatus(err, path_, "cannot stat");
  }
  bool regular = S_ISREG(st.st_mode);
  bool empty = regular ? st.st_size == 0 : !appended_;
  std::string_view parts[2] = {empty ? prefix_if_empty : std::string_view(), data};
  Status status;
  for (std::string_view part : parts) {
    size_t off = 0;
    while (status.ok() && off < part.size()) {
      ssize_t n = ::write(fd_, part.data() + off, part.size() - off);
      if (n < 0) {
        if (errno == EINTR) continue;
        status = ErrnoStatus(errno, path_, "write failed");
      } else {
        off += static_cast<size_t>(n);
      }
    }
  }
  if (status.ok() && regular && ::fdatasync(fd_) != 0)
    status = ErrnoStatus(errno, path_, "fdatasync failed");
  // No partial batch stays behind; a failed cut is not worse than the error being reported.
  if (!status.ok() && regular) {
    int ignored = ::ftruncate(fd_, st.st_size);
    (void)ignored;
  }
  ::flock(fd_, LOCK_UN);
  if (status.ok()) appended_ = true;
  return status;
}

}  // namespace mq
