// mq-admin import QUEUE [--format json|srmp] [--create] [--new-ids]: append the messages of
//   such input from stdin, in one transaction: all of them or, on any bad line or document,
//   none. Message ids are kept unless --new-ids (an id already in the store is an error);
//   lookup ids are new. SRMP input may come from MSMQ: with or without the HTTP request in
//   front, the samples of [MC-MQSRM] as printed.
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdio>

#include <fmt/format.h>

#include "admin.hpp"
#include "base/codec.hpp"
#include "output/format.hpp"
#include "progress.hpp"
#include "wire/srmp.hpp"

namespace mq::admin {

namespace {

bool IStartsWith(std::string_view s, std::string_view prefix) {
  if (s.size() < prefix.size()) return false;
  for (size_t i = 0; i < prefix.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(s[i])) !=
        std::tolower(static_cast<unsigned char>(prefix[i])))
      return false;
  return true;
}

// What mq-send would refuse, refused here too, so that an imported message never fails later
// (a reply to a response queue that can never exist, an ack to a malformed admin queue).
// Sizes and the queue's own limits are checked by Append, which imports all or nothing. With
// `foreign`, a queue reference that is no mq queue name may also be an MSMQ format name of
// another machine (DIRECT=..., MULTICAST=...), as SRMP messages from MSMQ carry: kept as text,
// never opened (an acknowledgement to it is dropped as to a missing admin queue).
Status Validate(const Message& m, bool foreign) {
  for (auto [name, ref] : {std::pair{"response_queue", &m.response_queue},
                           std::pair{"admin_queue", &m.admin_queue},
                           std::pair{"destination_queue", &m.destination_queue}}) {
    if (ref->empty()) continue;
    auto parsed = ParseQueueRef(*ref);
    if (!parsed.ok() && foreign &&
        (IStartsWith(*ref, "DIRECT=") || IStartsWith(*ref, "MULTICAST=")))
      continue;
    if (!parsed.ok())
      return Status::IllegalPropertyValue(
          fmt::format("{} '{}' is not a valid queue name: {}", name, *ref, parsed.status().text()));
  }
  if (m.ack && m.admin_queue.empty())
    return Status::IllegalPropertyValue("ack is set but admin_queue is empty");
  if (m.priority > 7)
    return Status::IllegalPropertyValue(
        fmt::format("priority {} is out of range 0..7", m.priority));
  if (!m.id.empty() && m.id.size() != kIdSize)
    return Status::IllegalPropertyValue("id must be a message id");
  if (!m.correlation_id.empty() && m.correlation_id.size() != kIdSize)
    return Status::IllegalPropertyValue("correlation_id must be 20 bytes");
  if (!IsValidUtf8(m.label)) return Status::IllegalPropertyValue("label is not UTF-8");
  return {};
}

// What both import formats share: new ids on request, and the count of what was read (of the
// last pass, after a rewind) for the summary.
class ImportSource : public MessageSource {
 public:
  bool new_ids_ = false;
  Progress* progress_ = nullptr;

 protected:
  // A message read whole.
  void Took(Message& m) {
    if (new_ids_) m.id.clear();
    if (progress_) {
      progress_->messages++;
      progress_->bytes += m.body.size();
    }
  }
  void Restarted() {
    if (progress_) progress_->messages = progress_->bytes = 0;
  }
};

// Reads JSON lines from a rewindable temporary copy of stdin, so that the transaction can run
// again (after map growth) without holding the input in memory.
class JsonLinesSource : public ImportSource {
 public:
  explicit JsonLinesSource(FILE* f) : f_(f) {}
  ~JsonLinesSource() override { std::free(line_); }

  Result<bool> Next(Message& m) override {
    for (;;) {
      errno = 0;
      ssize_t n = getline(&line_, &cap_, f_);
      if (n < 0) {
        if (errno) return ErrnoStatus(errno, "stdin", "read failed");
        return false;
      }
      ++lineno_;
      std::string_view text(line_, static_cast<size_t>(n));
      while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.remove_suffix(1);
      if (text.find_first_not_of(" \t") == std::string_view::npos) continue;
      auto j = nlohmann::ordered_json::parse(text, nullptr, /*allow_exceptions=*/false);
      if (j.is_discarded())
        return Status::InvalidArg(fmt::format("line {}: not valid JSON", lineno_), "stdin");
      auto msg = MessageFromJson(j);
      if (!msg.ok())
        return Status::InvalidArg(fmt::format("line {}: {}", lineno_, msg.status().text()),
                                  "stdin");
      Status valid = Validate(*msg, false);
      if (!valid.ok())
        return Status(valid.code(), fmt::format("line {}: {}", lineno_, valid.text()), "stdin");
      m = std::move(*msg);
      Took(m);
      return true;
    }
  }

  Status Rewind() override {
    lineno_ = 0;
    Restarted();
    if (fseek(f_, 0, SEEK_SET) != 0) return ErrnoStatus(errno, "stdin", "cannot rewind");
    return {};
  }

 private:
  FILE* f_;
  char* line_ = nullptr;
  size_t cap_ = 0;
  uint64_t lineno_ = 0;
};

// Reads SRMP documents from the spooled stdin, mapped into memory (pages come and go as the
// kernel likes: memory does not grow with the input), one document at a time.
// A spool file mapped into memory, read-only (empty: nothing mapped).
class Mapped {
 public:
  Mapped() = default;
  Mapped(const Mapped&) = delete;
  Mapped& operator=(const Mapped&) = delete;
  ~Mapped() {
    if (map_) ::munmap(map_, size_);
  }
  // `what` names the spool in errors.
  Status Map(FILE* f, const char* what) {
    struct stat st;
    if (fstat(fileno(f), &st) != 0) return ErrnoStatus(errno, what, "cannot stat the spool");
    size_ = static_cast<size_t>(st.st_size);
    if (size_ == 0) return {};
    map_ = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fileno(f), 0);
    if (map_ == MAP_FAILED) {
      map_ = nullptr;
      return ErrnoStatus(errno, what, "cannot map the spool");
    }
    return {};
  }
  std::string_view bytes() const { return {static_cast<const char*>(map_), map_ ? size_ : 0}; }

 private:
  void* map_ = nullptr;
  size_t size_ = 0;
};

class SrmpSource : public ImportSource {
 public:
  Status Open(FILE* f) { return map_.Map(f, "stdin"); }

  Result<bool> Next(Message& m) override {
    for (;;) {
      std::string_view rest = map_.bytes();
      rest.remove_prefix(pos_);
      size_t end = SrmpDocumentEnd(rest);
      if (end == 0) return false;
      pos_ += end;
      ++docno_;
      SrmpReceipt receipt;
      Status s = DecodeSrmp(rest.substr(0, end), m, nullptr, &receipt);
      // A commitment receipt is stored as the acknowledgement it stands for, as serve stores
      // one posted to a queue of this store. The others (stream and delivery receipts: how a
      // transfer went) answer messages and are none: skipped, counted.
      if (s.ok() && receipt.kind == SrmpReceipt::Kind::kCommitment) {
        AckOfCommitmentReceipt(receipt, m);
      } else if (s.ok() && receipt.kind != SrmpReceipt::Kind::kNone) {
        ++receipts_;
        continue;
      }
      if (s.ok()) s = Validate(m, true);
      if (!s.ok())
        return Status(s.code(), fmt::format("document {}: {}", docno_, s.text()), "stdin");
      Took(m);
      return true;
    }
  }
  // Receipts skipped (of the last pass).
  uint64_t receipts() const { return receipts_; }

  Status Rewind() override {
    pos_ = 0;
    docno_ = 0;
    receipts_ = 0;
    Restarted();
    return {};
  }

 private:
  Mapped map_;
  size_t pos_ = 0;
  uint64_t docno_ = 0;
  uint64_t receipts_ = 0;
};

// The messages of the input, decoded before the store's write transaction begins: a slow or
// crafted document never runs its parse while the write lock is held (issue 23). Each
// message is kept as its store record (a 4-byte length, then the record) in a temporary
// file, mapped for reading; the transaction (run again after a map growth) only reads
// records back.
class RecordSpool : public MessageSource {
 public:
  // Reads `parsed` to its end (or its first error, returned as it is).
  Status Fill(MessageSource& parsed) {
    file_.reset(tmpfile());
    if (!file_) return ErrnoStatus(errno, "tmpfile", "cannot spool the decoded messages");
    MQ_RETURN_IF_ERROR(parsed.Rewind());  // from the start of its input
    Message m;
    std::string rec, len;
    for (;;) {
      auto more = parsed.Next(m);
      if (!more.ok()) return more.status();
      if (!*more) break;
      types_ = types_ || !m.message_type_name.empty();
      EncodeRecordInto(m, rec);
      if (rec.size() > UINT32_MAX)
        return Status::InsufficientResources("a message is too large to import", "stdin");
      len.clear();
      PutU32BE(len, static_cast<uint32_t>(rec.size()));
      if (fwrite(len.data(), 1, len.size(), file_.get()) != len.size() ||
          fwrite(rec.data(), 1, rec.size(), file_.get()) != rec.size())
        return ErrnoStatus(errno, "tmpfile", "cannot spool the decoded messages");
    }
    if (fflush(file_.get()) != 0)
      return ErrnoStatus(errno, "tmpfile", "cannot spool the decoded messages");
    return map_.Map(file_.get(), "tmpfile");
  }

  Result<bool> Next(Message& m) override {
    std::string_view rest = map_.bytes();
    if (pos_ >= rest.size()) return false;
    rest.remove_prefix(pos_);
    uint32_t n = GetU32BE(rest, 0);  // written whole above
    MQ_RETURN_IF_ERROR(DecodeRecord(rest.substr(4, n), m));
    pos_ += 4 + static_cast<size_t>(n);
    return true;
  }
  Status Rewind() override {
    pos_ = 0;
    return {};
  }
  bool MayHaveTypes() const override { return types_; }

 private:
  std::unique_ptr<FILE, int (*)(FILE*)> file_{nullptr, fclose};
  Mapped map_;
  size_t pos_ = 0;
  bool types_ = false;
};

}  // namespace

Command SetupImport(CLI::App& app, Context& ctx) {
  struct Args {
    std::string queue;
    std::string format = "json";
    bool create = false;
    bool new_ids = false;
  };
  auto args = std::make_shared<Args>();
  auto* sub = app.add_subcommand("import",
                                 "Append messages from JSON lines or SRMP documents on stdin");
  sub->add_option("QUEUE", args->queue, "Queue to append to")->required();
  sub->add_option("--format", args->format, "Input format: json (default) or srmp")
      ->type_name("NAME")
      ->check(CLI::IsMember({"json", "srmp"}));
  sub->add_flag("--create", args->create, "Create the queue if it is missing");
  sub->add_flag("--new-ids", args->new_ids, "Give the messages new ids");
  AddQuietOption(*sub, ctx.quiet);
  return {sub, [args](Context& ctx) {
            auto ref = cli::ParseQueueArg(args->queue);
            if (!ref.ok()) return cli::Fail(ref.status());
            std::unique_ptr<FILE, int (*)(FILE*)> spool(tmpfile(), fclose);
            if (!spool) return cli::Fail(ErrnoStatus(errno, "tmpfile", "cannot spool stdin"));
            char buf[65536];
            for (;;) {
              ssize_t n = ::read(0, buf, sizeof buf);
              if (n < 0 && errno == EINTR) continue;
              if (n < 0) return cli::Fail(ErrnoStatus(errno, "stdin", "read failed"));
              if (n == 0) break;
              if (fwrite(buf, 1, static_cast<size_t>(n), spool.get()) != static_cast<size_t>(n))
                return cli::Fail(ErrnoStatus(errno, "tmpfile", "cannot spool stdin"));
            }
            if (fflush(spool.get()) != 0)
              return cli::Fail(ErrnoStatus(errno, "tmpfile", "cannot spool stdin"));
            // Every document decoded first (the progress line counts them), so that no parse
            // runs in the transaction.
            Progress progress("import " + ref->Full(), ctx.quiet);
            RecordSpool records;
            Status filled;
            uint64_t receipts = 0;
            if (args->format == "srmp") {
              SrmpSource src;
              Status opened = src.Open(spool.get());
              if (!opened.ok()) return cli::Fail(opened);
              src.new_ids_ = args->new_ids;
              src.progress_ = &progress;
              filled = records.Fill(src);
              receipts = src.receipts();
            } else {
              JsonLinesSource src(spool.get());
              src.new_ids_ = args->new_ids;
              src.progress_ = &progress;
              filled = records.Fill(src);
            }
            if (!filled.ok()) return cli::Fail(filled);
            spool.reset();
            auto store = ctx.Open();
            if (!store.ok()) return cli::Fail(store.status());
            AppendOptions o;
            o.create_queue = args->create;
            o.keep_identity = true;
            Status s = (*store)->Append(*ref, o, records, nullptr);
            if (!s.ok()) return cli::Fail(s.WithSubject(ref->Full()));
            progress.Done(ref->Full(),
                          fmt::format("imported {}, {} of bodies{}",
                                      Messages(progress.messages.load()),
                                      HumanBytes(progress.bytes.load()),
                                      receipts ? fmt::format(" ({} stream or delivery receipts "
                                                             "skipped: they say how a transfer "
                                                             "went, and are no messages)",
                                                             receipts)
                                               : std::string()));
            return 0;
          }};
}

}  // namespace mq::admin
