// mq-admin export QUEUE [--format json]: every message of a queue as JSON lines (all
//   properties and the body), delayed and Locked ones included, in arrival order (so that an
//   import gives the same order), without removing anything.
// mq-admin import QUEUE [--create] [--new-ids]: append the messages of such JSON lines from
//   stdin, in one transaction: all of them or, on any bad line, none. Message ids are kept
//   unless --new-ids (an id already in the store is an error); lookup ids are new.
#include <unistd.h>

#include <cerrno>
#include <cstdio>

#include <fmt/format.h>

#include "admin.hpp"
#include "codec.hpp"
#include "progress.hpp"

namespace mq::admin {

namespace {

// Reads JSON lines from a rewindable temporary copy of stdin, so that the transaction can run
// again (after map growth) without holding the input in memory.
class JsonLinesSource : public MessageSource {
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
        return Status(Code::kInvalidArg, fmt::format("line {}: not valid JSON", lineno_),
                      "stdin");
      auto msg = MessageFromJson(j);
      if (!msg.ok())
        return Status(Code::kInvalidArg, fmt::format("line {}: {}", lineno_, msg.status().text()),
                      "stdin");
      Status valid = Validate(*msg);
      if (!valid.ok())
        return Status(valid.code(), fmt::format("line {}: {}", lineno_, valid.text()), "stdin");
      m = std::move(*msg);
      if (new_ids_) m.id.clear();
      if (progress_) {
        progress_->messages++;
        progress_->bytes += m.body.size();
      }
      return true;
    }
  }

  Status Rewind() override {
    lineno_ = 0;
    if (progress_) progress_->messages = progress_->bytes = 0;
    if (fseek(f_, 0, SEEK_SET) != 0) return ErrnoStatus(errno, "stdin", "cannot rewind");
    return {};
  }

  bool new_ids_ = false;

 private:
  // What mq-send would refuse, refused here too, so that an imported message never fails later
  // (a reply to a response queue that can never exist, an ack to a malformed admin queue).
  // Sizes and the queue's own limits are checked by Append, which imports all or nothing.
  static Status Validate(const Message& m) {
    for (auto [name, ref] : {std::pair{"response_queue", &m.response_queue},
                             std::pair{"admin_queue", &m.admin_queue},
                             std::pair{"destination_queue", &m.destination_queue}}) {
      if (ref->empty()) continue;
      auto parsed = ParseQueueRef(*ref);
      if (!parsed.ok())
        return Status(Code::kIllegalPropertyValue,
                      fmt::format("{} '{}' is not a valid queue name: {}", name, *ref,
                                  parsed.status().text()));
    }
    if (m.ack && m.admin_queue.empty())
      return Status(Code::kIllegalPropertyValue, "ack is set but admin_queue is empty");
    if (m.priority > 7)
      return Status(Code::kIllegalPropertyValue,
                    fmt::format("priority {} is out of range 0..7", m.priority));
    if (!m.id.empty() && m.id.size() != kIdSize)
      return Status(Code::kIllegalPropertyValue, "id must be a message id");
    if (!m.correlation_id.empty() && m.correlation_id.size() != kIdSize)
      return Status(Code::kIllegalPropertyValue, "correlation_id must be 20 bytes");
    if (!IsValidUtf8(m.label)) return Status(Code::kIllegalPropertyValue, "label is not UTF-8");
    return {};
  }

  FILE* f_;
  char* line_ = nullptr;
  size_t cap_ = 0;
  uint64_t lineno_ = 0;

 public:
  Progress* progress_ = nullptr;  // counts what was read (the last pass after a rewind)
};

// Passes messages on to the output, counting them for the summary and progress lines.
class CountingSink : public MessageSink {
 public:
  CountingSink(MessageSink& out, Progress& progress) : out_(out), progress_(progress) {}
  Status Add(const Message& m) override {
    progress_.messages++;
    progress_.bytes += m.body.size();
    return out_.Add(m);
  }
  Status Flush() override { return out_.Flush(); }
  Status Taken() override { return out_.Taken(); }

 private:
  MessageSink& out_;
  Progress& progress_;
};

}  // namespace

Command SetupExport(CLI::App& app, Context&) {
  struct Args {
    std::string queue;
    std::string format = "json";
    bool quiet = false;
  };
  auto args = std::make_shared<Args>();
  auto* sub = app.add_subcommand("export", "Print every message of a queue as JSON lines");
  sub->add_option("QUEUE", args->queue, "Queue, subqueue or journal")->required();
  sub->add_option("--format", args->format, "Output format: json")
      ->type_name("NAME")
      ->check(CLI::IsMember({"json"}));
  AddQuietOption(*sub, args->quiet);
  return {sub, [args](Context& ctx) {
            auto ref = cli::ParseQueueArg(args->queue);
            if (!ref.ok()) return cli::Fail(ref.status());
            auto store = ctx.Open();
            if (!store.ok()) return cli::Fail(store.status());
            cli::OutputArgs out;
            out.json = true;
            auto sink = cli::OutputSink::Make(out);
            if (!sink.ok()) return cli::Fail(sink.status());
            Selection all;
            all.anchor = Anchor::kArrival;  // every message, delayed and Locked ones too
            all.limit = 0;
            Progress progress("export " + ref->Full(), args->quiet);
            CountingSink counting(**sink, progress);
            Status s = (*store)->Peek(*ref, all, {}, counting);
            if (s.ok() || s.code() == Code::kMessageNotFound) {
              progress.Done(ref->Full(), fmt::format("exported {} messages, {} of bodies",
                                                     progress.messages.load(),
                                                     HumanBytes(progress.bytes.load())));
              return 0;
            }
            if (s.code() == Code::kBrokenPipe) return 0;
            return cli::Fail(s.WithSubject(ref->Full()));
          }};
}

Command SetupImport(CLI::App& app, Context&) {
  struct Args {
    std::string queue;
    bool create = false;
    bool new_ids = false;
    std::string format = "json";
    bool quiet = false;
  };
  auto args = std::make_shared<Args>();
  auto* sub = app.add_subcommand("import", "Append messages from JSON lines on stdin");
  sub->add_option("QUEUE", args->queue, "Queue to append to")->required();
  sub->add_flag("--create", args->create, "Create the queue if it is missing");
  sub->add_flag("--new-ids", args->new_ids, "Give the messages new ids");
  sub->add_option("--format", args->format, "Input format: json (what export prints)")
      ->type_name("NAME")
      ->check(CLI::IsMember({"json"}));
  AddQuietOption(*sub, args->quiet);
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
            auto store = ctx.Open();
            if (!store.ok()) return cli::Fail(store.status());
            Progress progress("import " + ref->Full(), args->quiet);
            JsonLinesSource src(spool.get());
            src.new_ids_ = args->new_ids;
            src.progress_ = &progress;
            AppendOptions o;
            o.create_queue = args->create;
            o.keep_identity = true;
            Status s = (*store)->Append(*ref, o, src, nullptr);
            if (!s.ok()) return cli::Fail(s.WithSubject(ref->Full()));
            progress.Done(ref->Full(), fmt::format("imported {} messages, {} of bodies",
                                                   progress.messages.load(),
                                                   HumanBytes(progress.bytes.load())));
            return 0;
          }};
}

}  // namespace mq::admin
