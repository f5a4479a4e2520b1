// batch.cpp: a send in batches (batch.hpp).
#include "send/batch.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <utility>

#include <fmt/format.h>

#include "base/ids.hpp"
#include "output/format.hpp"
#include "send/input.hpp"

namespace mq {

BatchSender::BatchSender(Store& store, std::vector<Destination> dests, Message proto,
                         BatchOptions options)
    : store_(store),
      dests_(std::move(dests)),
      proto_(std::move(proto)),
      options_(std::move(options)) {}

namespace {

// A batch's messages: the prototype with each body in turn.
class BodiesSource : public MessageSource {
 public:
  BodiesSource(const Message& proto, const std::string& bodies, const std::vector<size_t>& ends)
      : proto_(proto), bodies_(bodies), ends_(ends) {}
  Result<bool> Next(Message& m) override {
    if (i_ == ends_.size()) return false;
    size_t begin = i_ ? ends_[i_ - 1] : 0;
    m = proto_;
    m.body.assign(bodies_, begin, ends_[i_] - begin);
    ++i_;
    return true;
  }
  Status Rewind() override {
    i_ = 0;
    return {};
  }
  bool MayHaveTypes() const override { return !proto_.message_type_name.empty(); }

 private:
  const Message& proto_;
  const std::string& bodies_;
  const std::vector<size_t>& ends_;
  size_t i_ = 0;
};

}  // namespace

void BatchSender::Add(std::string_view body) {
  bodies_.append(body);
  ends_.push_back(bodies_.size());
}

Status BatchSender::Commit() {
  if (ends_.empty()) return {};
  BodiesSource src(proto_, bodies_, ends_);
  return Append(src);
}

Status BatchSender::Append(MessageSource& src) {
  const std::string& dedup = options_.append.dedup_key;
  ids_.clear();
  AppendReport report;
  Status s =
      store_.Append(dests_, options_.append, src, options_.print_ids ? &ids_ : nullptr, &report);
  for (const std::string& note : report.notes)
    if (s.ok() && noted_.insert(note).second && options_.note) options_.note(note);
  if (s.ok() && report.duplicate) {
    if (options_.note)
      options_.note(fmt::format("duplicate of {} (dedup key '{}'): dropped",
                                FormatMessageId(report.original_id), dedup));
    if (options_.print_ids) ids_ = {report.original_id};
  }
  if (!s.ok()) {
    if (sent_)
      return Status(s.code(), fmt::format("{}; {} earlier messages were sent", s.text(), sent_),
                    s.subject());
    return s;
  }
  sent_ += ends_.size();
  ends_.clear();
  bodies_.clear();
  if (options_.append.new_conversation) {
    // The new conversation's handle, once it exists: later batches send on it.
    options_.append.new_conversation = false;
    FdWriter out(1, "stdout");
    out.Append(FormatGuid(proto_.conversation_handle) + "\n");
    MQ_RETURN_IF_ERROR(out.Flush());
  }
  if (options_.print_ids) {
    FdWriter out(1, "stdout");
    for (const auto& id : ids_) out.Append(FormatMessageId(id) + "\n");
    MQ_RETURN_IF_ERROR(out.Flush());
  }
  return {};
}

Status SendRecords(int fd, char sep, BatchSender& sender) {
  MQ_RETURN_IF_ERROR(ForEachRecord(
      fd, sep,
      [&](std::string_view rec) -> Status {
        sender.Add(rec);
        return sender.Full() ? sender.Commit() : Status();
      },
      // A writer that pauses (tail -f): what it wrote so far is sent now, not with the next
      // 10,000 lines.
      [&] { return sender.Commit(); }));
  return sender.Commit();
}

SpoolSource::~SpoolSource() {
  if (f_) fclose(f_);
  std::free(line_);
}

Status SpoolSource::Spool() {
  f_ = tmpfile();
  if (!f_) return ErrnoStatus(errno, "tmpfile", "cannot spool stdin");
  char buf[65536];
  for (;;) {
    ssize_t n = ::read(fd_, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ErrnoStatus(errno, "stdin", "read failed");
    if (n == 0) break;
    if (fwrite(buf, 1, static_cast<size_t>(n), f_) != static_cast<size_t>(n))
      return ErrnoStatus(errno, "tmpfile", "cannot spool stdin");
  }
  if (fflush(f_) != 0) return ErrnoStatus(errno, "tmpfile", "cannot spool stdin");
  return {};
}

Result<bool> SpoolSource::Next(Message& m) {
  errno = 0;
  ssize_t n = getdelim(&line_, &cap_, sep_, f_);
  if (n < 0) {
    if (errno) return ErrnoStatus(errno, "tmpfile", "read failed");
    return false;
  }
  size_t len = static_cast<size_t>(n);
  if (len && line_[len - 1] == sep_) --len;
  m = proto_;
  m.body.assign(line_, len);
  return true;
}

Status SpoolSource::Rewind() {
  if (fseek(f_, 0, SEEK_SET) != 0) return ErrnoStatus(errno, "tmpfile", "cannot rewind");
  return {};
}

}  // namespace mq
