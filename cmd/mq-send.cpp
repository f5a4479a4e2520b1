// mq-send: put messages into a queue.
//
//   mq-send [options] QUEUE [BODY]      body from BODY, else -f FILE, else all of stdin
//   mq-send -l QUEUE < lines            one message per line (-0: per NUL-terminated record)
//
// With -l/-0 the input is cut into batches of many messages per store transaction; each
// batch is atomic and durable when it commits. Without --express every commit is synced to
// disk before mq-send exits 0.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <set>

#include <fmt/format.h>

#include "base/codec.hpp"
#include "common.hpp"
#include "store/conversation.hpp"
#include "base/ids.hpp"
#include "base/units.hpp"

namespace mq {
namespace {

constexpr size_t kBatchMessages = 10000;
constexpr size_t kBatchBytes = 8 << 20;

struct SendArgs {
  cli::StoreArgs store;
  std::string queue;
  std::string remote_queue;  // LINK:QUEUE: QUEUE (the message goes to out;LINK)
  std::string body;
  bool has_body = false;
  std::string file;
  bool lines = false;
  bool null = false;
  int priority = kDefaultPriority;
  std::string label;
  std::string correlation;
  uint32_t app = 0;
  std::string body_type;
  std::string ttrq, ttbr;
  bool journal = false, deadletter = false;
  std::string admin_queue, response_queue, ack;
  bool express = false;
  bool print_id = false;
  std::string delay, at;
  bool tx = false;
  std::string dedup;
  std::string reply_to;
  bool reply_to_env = false;
  // Service Broker: SEND ON CONVERSATION.
  std::string conversation;  // a UUID, or "new"
  std::string group;
  std::string message_type;
  std::string service, contract;
  // Authentication properties MSMQ lets a sender set (seed 002: read/write).
  std::string hash_algorithm, provider_type, provider_name;
  std::string extension;  // hex digits, or @FILE
};

// Where a reply goes (--reply-to, --reply-to-env): the request's response queue, with the
// request's id as correlation id.
struct ReplyTarget {
  std::string queue;
  std::string request_id;  // 20 bytes
};

// --reply-to-env: the request as mq-receive --exec describes it in MQ_ID and
// MQ_RESPONSE_QUEUE.
Result<ReplyTarget> ReplyFromEnv() {
  const char* id_text = std::getenv("MQ_ID");
  if (!id_text || !*id_text)
    return Status(Code::kInvalidArg,
                  "--reply-to-env: MQ_ID is not set (use it in a command run by mq-receive "
                  "--exec or mq-watch --exec)");
  auto id = ParseMessageId(id_text);
  if (!id) return Status(Code::kInvalidArg, "--reply-to-env: MQ_ID is not a message id", id_text);
  const char* queue = std::getenv("MQ_RESPONSE_QUEUE");
  if (!queue || !*queue)
    return Status(Code::kInvalidArg, "the request names no response queue (MQ_RESPONSE_QUEUE "
                  "is empty): there is nowhere to reply", id_text);
  return ReplyTarget{queue, *id};
}

// --reply-to MSGID: the request as the store holds it (still in its queue, Locked by the
// receive that is answering it, or as a journal copy).
Result<ReplyTarget> ReplyFromStore(Store& store, const std::string& text) {
  auto id = ParseMessageId(text);
  if (!id) return Status(Code::kInvalidArg, "--reply-to: not a message id", text);
  auto m = store.FindMessage(*id);
  if (!m.ok()) {
    if (m.status().code() == Code::kMessageNotFound)
      return Status(Code::kMessageNotFound,
                    "--reply-to: the request is no longer in the store (inside --exec use "
                    "--reply-to-env)",
                    text);
    return m.status();
  }
  if (m->response_queue.empty())
    return Status(Code::kInvalidArg,
                  "the request names no response queue: there is nowhere to reply", text);
  return ReplyTarget{m->response_queue, *id};
}

Status ReadAll(int fd, const std::string& name, std::string& out) {
  char buf[65536];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n == 0) return {};
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoStatus(errno, name, "read failed");
    }
    out.append(buf, static_cast<size_t>(n));
  }
}

// --extension: hex digits, or @FILE for the bytes of a file.
Status ReadExtension(const std::string& text, std::string& out) {
  if (text[0] != '@') {
    auto raw = HexDecode(text);
    if (!raw)
      return Status(Code::kInvalidArg,
                    fmt::format("invalid --extension '{}': use hex digits or @FILE", text));
    out = std::move(*raw);
    return {};
  }
  std::string file = text.substr(1);
  if (file.empty()) return Status(Code::kInvalidArg, "--extension @ needs a file name: @FILE");
  int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT)
      return Status(Code::kInvalidArg, "cannot open extension file: no such file", file);
    return ErrnoStatus(errno, file, "cannot open extension file");
  }
  Status s = ReadAll(fd, file, out);
  ::close(fd);
  return s;
}

class Sender {
 public:
  Sender(Store& store, QueueRef ref, Message proto, const SendArgs& args)
      : store_(store), ref_(std::move(ref)), proto_(std::move(proto)), args_(args),
        new_conversation_(args.conversation == "new") {}

  // The batch's messages stay from one batch to the next (each the prototype with its own
  // body), so that their bodies' buffers are reused: a long -l send allocates nothing per
  // message once the first batch is made.
  void Add(std::string_view body) {
    if (used_ == batch_.size()) batch_.push_back(proto_);
    batch_[used_].body.assign(body);
    bytes_ += body.size();
    ++used_;
  }
  bool Full() const { return used_ >= kBatchMessages || bytes_ >= kBatchBytes; }

  Status Commit() {
    if (used_ == 0) return {};
    VectorSource src(batch_, used_);
    return Append(src);
  }

  // Appends everything `src` gives in one transaction.
  Status Append(MessageSource& src) {
    AppendOptions o;
    o.create_queue = args_.store.create;
    o.transactional = args_.tx;
    o.dedup_key = args_.dedup;
    o.new_conversation = new_conversation_;
    o.remote_queue = args_.remote_queue;
    ids_.clear();
    AppendReport report;
    Status s = store_.Append(ref_, o, src, args_.print_id ? &ids_ : nullptr, &report);
    for (const std::string& note : report.notes)
      if (s.ok() && noted_.insert(note).second) cli::Note(ref_.Full(), note);
    if (s.ok() && report.duplicate) {
      cli::Note(ref_.Full(), fmt::format("duplicate of {} (dedup key '{}'): dropped",
                                         FormatMessageId(report.original_id), args_.dedup));
      if (args_.print_id) ids_ = {report.original_id};
    }
    if (!s.ok()) {
      if (sent_)
        return Status(s.code(),
                      fmt::format("{}; {} earlier messages were sent", s.text(), sent_),
                      s.subject());
      return s;
    }
    sent_ += used_;
    used_ = 0;
    bytes_ = 0;
    if (new_conversation_) {
      // The new conversation's handle, once it exists: later batches send on it.
      new_conversation_ = false;
      FdWriter out(1, "stdout");
      out.Append(FormatGuid(proto_.conversation_handle) + "\n");
      MQ_RETURN_IF_ERROR(out.Flush());
    }
    if (args_.print_id) {
      FdWriter out(1, "stdout");
      for (const auto& id : ids_) out.Append(FormatMessageId(id) + "\n");
      MQ_RETURN_IF_ERROR(out.Flush());
    }
    return {};
  }

 private:
  Store& store_;
  QueueRef ref_;
  Message proto_;
  const SendArgs& args_;
  std::vector<Message> batch_;
  size_t used_ = 0;  // the messages of batch_ in this batch
  std::vector<std::string> ids_;
  std::set<std::string> noted_;  // notes already given (one per admin queue, not per batch)
  size_t bytes_ = 0;
  uint64_t sent_ = 0;
  bool new_conversation_ = false;
};

// The records of stdin for a --tx send: spooled to an unlinked temporary file first, so that
// one transaction can take them all (and run again if the store's map must grow) without
// holding them in memory.
class SpoolSource : public MessageSource {
 public:
  SpoolSource(const Message& proto, char sep) : proto_(proto), sep_(sep) {}
  ~SpoolSource() override {
    if (f_) fclose(f_);
    std::free(line_);
  }
  Status Spool() {
    f_ = tmpfile();
    if (!f_) return ErrnoStatus(errno, "tmpfile", "cannot spool stdin");
    char buf[65536];
    for (;;) {
      ssize_t n = ::read(0, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return ErrnoStatus(errno, "stdin", "read failed");
      if (n == 0) break;
      if (fwrite(buf, 1, static_cast<size_t>(n), f_) != static_cast<size_t>(n))
        return ErrnoStatus(errno, "tmpfile", "cannot spool stdin");
    }
    if (fflush(f_) != 0) return ErrnoStatus(errno, "tmpfile", "cannot spool stdin");
    return {};
  }
  Result<bool> Next(Message& m) override {
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
  Status Rewind() override {
    if (fseek(f_, 0, SEEK_SET) != 0) return ErrnoStatus(errno, "tmpfile", "cannot rewind");
    return {};
  }

 private:
  Message proto_;
  char sep_;
  FILE* f_ = nullptr;
  char* line_ = nullptr;
  size_t cap_ = 0;
};

// Splits stdin on `sep`, sending records in batches; memory stays bounded by the batch.
Status SendRecords(Sender& sender, char sep) {
  std::string pending;
  char buf[65536];
  for (;;) {
    ssize_t n = ::read(0, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoStatus(errno, "stdin", "read failed");
    }
    if (n == 0) break;
    // memchr finds each separator; a record whole in `buf` goes to the batch from there, one
    // that spans reads is put together in `pending`.
    const char* p = buf;
    const char* end = buf + n;
    for (;;) {
      auto* hit = static_cast<const char*>(memchr(p, sep, static_cast<size_t>(end - p)));
      if (!hit) break;
      std::string_view rec(p, static_cast<size_t>(hit - p));
      if (pending.empty()) {
        sender.Add(rec);
      } else {
        pending.append(rec);
        sender.Add(pending);
        pending.clear();
      }
      p = hit + 1;
      if (sender.Full()) MQ_RETURN_IF_ERROR(sender.Commit());
    }
    pending.append(p, static_cast<size_t>(end - p));
  }
  if (!pending.empty()) sender.Add(pending);
  return sender.Commit();
}

// The Service Broker part of a message: SEND ON CONVERSATION handle MESSAGE TYPE name.
Status SetConversation(const SendArgs& a, Message& m) {
  bool conv = !a.conversation.empty();
  if (!conv && (!a.group.empty() || !a.service.empty() || !a.contract.empty()))
    return Status(Code::kInvalidArg, "--group, --service and --contract go with --conversation");
  if (conv && (!a.delay.empty() || !a.at.empty()))
    return Status(Code::kInvalidArg,
                  "--delay and --at do not go with --conversation (its sequence is its order)");
  if (!a.message_type.empty()) m.message_type_name = a.message_type;
  if (!conv) return {};
  if (m.message_type_name.empty()) m.message_type_name = std::string(kDefaultMessageType);
  if (a.conversation == "new") {
    m.conversation_handle = NewGuid();
  } else {
    auto h = ParseGuid(a.conversation);
    if (!h || IsNil(*h))
      return Status(Code::kInvalidArg,
                    fmt::format("invalid conversation handle '{}': expected a UUID or 'new'",
                                a.conversation));
    m.conversation_handle = *h;
  }
  if (!a.group.empty()) {
    auto g = ParseGuid(a.group);
    if (!g || IsNil(*g))
      return Status(Code::kInvalidArg,
                    fmt::format("invalid conversation group id '{}': expected a UUID", a.group));
    m.conversation_group_id = *g;
  }
  m.service_name = a.service;
  m.service_contract_name = a.contract;
  return {};
}

Result<Message> BuildPrototype(const SendArgs& a) {
  Message m;
  m.priority = static_cast<uint8_t>(a.priority);
  m.label = a.label;
  if (!a.correlation.empty()) {
    auto c = ParseCorrelationId(a.correlation);
    if (!c.ok()) return c.status();
    m.correlation_id = *c;
  }
  m.app_specific = a.app;
  if (!a.body_type.empty()) {
    auto bt = ParseBodyType(a.body_type);
    if (!bt.ok()) return bt.status();
    m.body_type = *bt;
  }
  int64_t now = NowMs();
  m.sent_time = now;
  for (auto [text, field] : {std::pair{&a.ttrq, &m.ttrq}, std::pair{&a.ttbr, &m.ttbr}}) {
    if (text->empty()) continue;
    auto d = ParseDuration(*text);
    if (!d.ok()) return d.status();
    *field = *d == kInfinite ? 0 : now + *d;
  }
  m.journal = a.journal;
  m.deadletter = a.deadletter;
  for (auto [text, field] : {std::pair{&a.admin_queue, &m.admin_queue},
                             std::pair{&a.response_queue, &m.response_queue}}) {
    if (text->empty()) continue;
    auto ref = ParseQueueRef(*text);
    if (!ref.ok()) return ref.status();
    if (ref->IsOutgoing())
      return Status(Code::kUnsupportedFormatnameOperation,
                    "a link's outgoing queue takes no acknowledgements or replies", ref->Full());
    *field = ref->Full();
  }
  if (!a.ack.empty()) {
    auto ack = ParseAckLevel(a.ack);
    if (!ack.ok()) return ack.status();
    if (*ack && a.admin_queue.empty())
      return Status(Code::kInvalidArg, "--ack needs --admin-queue to send acknowledgements to");
    m.ack = *ack;
  }
  m.express = a.express;
  if (!a.hash_algorithm.empty()) {
    auto h = ParseHashAlgorithm(a.hash_algorithm);
    if (!h.ok()) return h.status();
    m.hash_algorithm = *h;
  }
  if (!a.provider_type.empty()) {
    auto t = ParseProviderType(a.provider_type);
    if (!t.ok()) return t.status();
    m.provider_type = *t;
  }
  if (!IsValidUtf8(a.provider_name))
    return Status(Code::kIllegalPropertyValue, "--provider-name is not UTF-8");
  m.provider_name = a.provider_name;
  if (!a.extension.empty()) MQ_RETURN_IF_ERROR(ReadExtension(a.extension, m.extension));
  if (!a.delay.empty()) {
    auto d = ParseDuration(a.delay);
    if (!d.ok()) return d.status();
    if (*d == kInfinite) return Status(Code::kInvalidArg, "--delay cannot be infinite");
    m.visible_time = now + *d;
  }
  if (!a.at.empty()) {
    auto t = ParseTime(a.at);
    if (!t.ok()) return t.status();
    m.visible_time = *t;
  }
  MQ_RETURN_IF_ERROR(SetConversation(a, m));
  return m;
}

int Run(int argc, char** argv) {
  cli::SetTool("mq-send");
  std::signal(SIGPIPE, SIG_IGN);
  SendArgs a;
  CLI::App app("Send messages to an mq queue", "mq-send");
  app.footer("Examples:\n"
             "  mq-send jobs 'resize a.jpg'       # one message\n"
             "  seq 10 | mq-send -l jobs          # a message per line\n"
             "  mq-send jobs -f report.pdf --label report\n"
             "  mq-send jobs --delay 1m30s later  # visible in 90 s\n"
             "See mq-send(1).");
  cli::AddVersionFlag(app);
  cli::AddStoreOption(app, a.store);
  app.add_option("QUEUE", a.queue, "Queue to send to (none with --reply-to)");
  app.add_option("BODY", a.body, "Message body (else -f FILE, else stdin)");
  auto* file = app.add_option("-f,--file", a.file, "Read the body from FILE ('-': stdin)")
                   ->type_name("FILE");
  auto* lines = app.add_flag("-l,--lines", a.lines, "Send each line of stdin as a message");
  auto* null = app.add_flag("-0,--null", a.null, "Send each NUL-terminated record of stdin");
  lines->excludes(null)->excludes(file);
  null->excludes(file);
  app.add_option("-p,--priority", a.priority, "Priority 0..7, higher first (default 3)")
      ->check(cli::WholeNumber(0, 7));
  app.add_option("-L,--label", a.label, "Label, at most 250 characters")->type_name("TEXT");
  app.add_option("-c,--correlation", a.correlation,
                 "Correlation id: 40 hex digits or a message id")
      ->type_name("ID");
  app.add_option("--app", a.app, "Application-specific 32-bit number (PROPID_M_APPSPECIFIC)")
      ->type_name("N")
      ->check(cli::WholeNumber(0, UINT32_MAX));
  app.add_option("--body-type", a.body_type, "Body type: bytes, text, json, xml or a VT number")
      ->type_name("TYPE");
  app.add_option("--ttrq", a.ttrq, "Time to reach the queue (stored as a deadline)")
      ->type_name("DURATION");
  app.add_option("--ttbr", a.ttbr, "Time to be received (stored as a deadline)")
      ->type_name("DURATION");
  app.add_flag("--journal", a.journal, "Ask for source journaling (MQMSG_JOURNAL)");
  app.add_flag("--deadletter", a.deadletter, "Ask for dead-lettering (MQMSG_DEADLETTER)");
  app.add_option("--admin-queue", a.admin_queue, "Queue for acknowledgements")
      ->type_name("QUEUE");
  app.add_option("--ack", a.ack,
                 "Acknowledgement level: none, full-reach-queue, full-receive, "
                 "nack-reach-queue, nack-receive (joined by ',')")
      ->type_name("LEVEL");
  app.add_option("--response-queue", a.response_queue, "Queue for replies")->type_name("QUEUE");
  app.add_flag("--express", a.express,
               "One disk sync per commit, not two (MQMSG_DELIVERY_EXPRESS)");
  app.add_option("--hash-algorithm", a.hash_algorithm,
                 "Hash algorithm for authentication: md5, sha1, sha256, ... or a number "
                 "(PROPID_M_HASH_ALG)")
      ->type_name("ALG");
  app.add_option("--provider-type", a.provider_type,
                 "Cryptographic provider type: rsa-full, dss, ... or a number "
                 "(PROPID_M_PROV_TYPE)")
      ->type_name("TYPE");
  app.add_option("--provider-name", a.provider_name,
                 "Cryptographic provider name (PROPID_M_PROV_NAME)")
      ->type_name("NAME");
  app.add_option("--extension", a.extension,
                 "Extension bytes outside the body: hex digits, or @FILE (PROPID_M_EXTENSION)")
      ->type_name("HEX|@FILE");
  app.add_flag("--print-id", a.print_id, "Print the id of each message sent");
  app.add_flag("--tx", a.tx,
               "One transaction for everything this invocation sends: all visible at once or "
               "none (Eod First/Last, transaction id and sequence numbers recorded)");
  app.add_option("--dedup", a.dedup,
                 "A second send with KEY within the queue's dedup window is accepted and "
                 "dropped")
      ->type_name("KEY");
  auto* delay = app.add_option("--delay", a.delay, "Not visible to readers before DURATION")
                    ->type_name("DURATION");
  app.add_option("--at", a.at, "Not visible to readers before TIME (RFC 3339 or @EPOCH)")
      ->type_name("TIME")
      ->excludes(delay);
  app.add_option("--conversation", a.conversation,
                 "Send on conversation HANDLE (a UUID); 'new' begins one and prints its handle")
      ->type_name("HANDLE");
  app.add_option("--group", a.group,
                 "Conversation group of the conversation (default: its own handle); moves an "
                 "existing conversation to group ID")
      ->type_name("ID");
  app.add_option("--message-type", a.message_type,
                 "Service Broker message type (default DEFAULT with --conversation); its "
                 "validation checks the body")
      ->type_name("NAME");
  app.add_option("--service", a.service, "Service name of a new conversation")
      ->type_name("NAME");
  app.add_option("--contract", a.contract, "Contract name of a new conversation")
      ->type_name("NAME");
  app.add_flag("--create", a.store.create, "Create the queue (and a named store) if missing");
  auto* reply_to =
      app.add_option("--reply-to", a.reply_to,
                     "Reply to request MSGID: send to its response queue with correlation id "
                     "MSGID")
          ->type_name("MSGID");
  app.add_flag("--reply-to-env", a.reply_to_env,
               "Reply to the request described by MQ_ID and MQ_RESPONSE_QUEUE (inside --exec)")
      ->excludes(reply_to);
  if (int rc = cli::Parse(app, argc, argv); rc >= 0) return rc;
  a.has_body = app.count("BODY") > 0;
  bool replying = !a.reply_to.empty() || a.reply_to_env;
  if (replying) {
    // The queue is the request's response queue: a lone argument is the body.
    if (app.count("BODY"))
      return cli::Fail(Status(Code::kInvalidArg,
                              "with --reply-to the queue is the request's response queue: give "
                              "only a body"));
    if (app.count("QUEUE")) {
      a.body = std::move(a.queue);
      a.queue.clear();
      a.has_body = true;
    }
    if (!a.correlation.empty())
      return cli::Fail(Status(Code::kInvalidArg,
                              "--correlation and --reply-to both set the correlation id"));
  } else if (!app.count("QUEUE")) {
    return cli::Fail(Status(Code::kInvalidArg, "QUEUE is required"));
  }
  if (a.has_body && (!a.file.empty() || a.lines || a.null))
    return cli::Fail(Status(Code::kInvalidArg, "give the body as an argument, -f, or on stdin"));

  std::unique_ptr<Store> opened;
  std::string reply_correlation;
  if (replying) {
    Result<ReplyTarget> target = ReplyTarget{};
    if (a.reply_to_env) {
      target = ReplyFromEnv();
    } else {
      auto st = cli::OpenStore(a.store);
      if (!st.ok()) return cli::Fail(st.status());
      opened = std::move(*st);
      target = ReplyFromStore(*opened, a.reply_to);
    }
    if (!target.ok()) return cli::Fail(target.status());
    a.queue = target->queue;
    reply_correlation = target->request_id;
  }
  // LINK:QUEUE: the message waits in the link's outgoing queue (mq-admin forward moves it).
  auto remote = ParseRemoteRef(a.queue);
  if (!remote.ok()) return cli::Fail(remote.status());
  Result<QueueRef> ref = *remote ? Result<QueueRef>(QueueRef{"out", (*remote)->link})
                                 : cli::ParseQueueArg(a.queue);
  if (!ref.ok()) return cli::Fail(ref.status());
  if (*remote) a.remote_queue = (*remote)->queue;
  if (!a.dedup.empty() && (a.lines || a.null) && !a.tx)
    return cli::Fail(Status(Code::kInvalidArg,
                            "--dedup with -l or -0 needs --tx (the key names the whole send)"));
  auto proto = BuildPrototype(a);
  if (!proto.ok()) return cli::Fail(proto.status().WithSubject(ref->Full()));
  if (!reply_correlation.empty()) proto->correlation_id = reply_correlation;

  // Read a single body before touching the store, so that a bad file changes nothing.
  std::string body;
  if (!a.lines && !a.null) {
    if (a.has_body) {
      body = a.body;
    } else if (!a.file.empty() && a.file != "-") {
      int fd = ::open(a.file.c_str(), O_RDONLY | O_CLOEXEC);
      if (fd < 0) {
        Status s = ErrnoStatus(errno, a.file, "cannot open body file");
        if (errno == ENOENT) s = Status(Code::kInvalidArg, "cannot open body file: no such file", a.file);
        return cli::Fail(s);
      }
      Status s = ReadAll(fd, a.file, body);
      ::close(fd);
      if (!s.ok()) return cli::Fail(s);
    } else {
      Status s = ReadAll(0, "stdin", body);
      if (!s.ok()) return cli::Fail(s);
    }
  }

  auto store = opened ? Result<std::unique_ptr<Store>>(std::move(opened)) : cli::OpenStore(a.store);
  if (!store.ok()) return cli::Fail(store.status());
  if (a.express) {
    Status s = (*store)->SetExpress(true);
    if (!s.ok()) return cli::Fail(s);
  }
  Sender sender(**store, *ref, *proto, a);
  Status s;
  if (a.tx && (a.lines || a.null)) {
    SpoolSource src(*proto, a.lines ? '\n' : '\0');
    s = src.Spool();
    if (s.ok()) s = sender.Append(src);
  } else if (a.lines || a.null) {
    s = SendRecords(sender, a.lines ? '\n' : '\0');
  } else {
    sender.Add(body);
    s = sender.Commit();
  }
  if (!s.ok()) return cli::Fail(s.WithSubject(ref->Full()));
  return 0;
}

}  // namespace
}  // namespace mq

int main(int argc, char** argv) { return mq::Run(argc, argv); }
