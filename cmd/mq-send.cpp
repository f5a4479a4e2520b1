// mq-send: put messages into a queue.
//
//   mq-send [options] QUEUE [BODY]      body from BODY, else -f FILE, else all of stdin
//   mq-send [options] a,b,LINK:c BODY   a copy in each queue, in one transaction
//   mq-send -l QUEUE < lines            one message per line (-0: per NUL-terminated record)
//
// With -l/-0 the input is cut into batches of many messages per store transaction; each
// batch is atomic and durable when it commits. Without --express every commit is synced to
// disk before mq-send exits 0.
#include <csignal>
#include <memory>

#include "common.hpp"
#include "send/batch.hpp"
#include "send/input.hpp"
#include "send/prototype.hpp"
#include "send/reply.hpp"

namespace mq {
namespace {

struct SendArgs {
  cli::StoreArgs store;
  std::string queue;
  std::string body;
  bool has_body = false;
  std::string file;
  bool lines = false;
  bool null = false;
  MessageSpec msg;  // the message's properties
  bool print_id = false;
  bool tx = false;
  std::string dedup;
  std::string reply_to;
  bool reply_to_env = false;
};

// mq-send's options: those that `scan` wants (every one for --help).
std::unique_ptr<CLI::App> BuildApp(SendArgs& a, cli::OptionScan& scan) {
  auto app = std::make_unique<CLI::App>("Send messages to an mq queue", "mq-send");
  app->footer("Examples:\n"
              "  mq-send jobs 'resize a.jpg'       # one message\n"
              "  seq 10 | mq-send -l jobs          # a message per line\n"
              "  mq-send jobs -f report.pdf --label report\n"
              "  mq-send jobs --delay 1m30s later  # visible in 90 s\n"
              "See mq-send(1).");
  cli::AddVersionFlag(*app);
  if (scan.Wants("-s,--store")) cli::AddStoreOption(*app, a.store);
  app->add_option("QUEUE", a.queue,
                  "Queue to send to, or queues joined by ',' (a copy in each); none with "
                  "--reply-to");
  app->add_option("BODY", a.body, "Message body (else -f FILE, else stdin)");
  CLI::Option* file = nullptr;
  if (scan.Wants("-f,--file"))
    file = app->add_option("-f,--file", a.file, "Read the body from FILE ('-': stdin)")
               ->type_name("FILE");
  CLI::Option* lines = nullptr;
  if (scan.Wants("-l,--lines"))
    lines = app->add_flag("-l,--lines", a.lines, "Send each line of stdin as a message");
  CLI::Option* null = nullptr;
  if (scan.Wants("-0,--null"))
    null = app->add_flag("-0,--null", a.null, "Send each NUL-terminated record of stdin");
  cli::Excludes(lines, {null, file});
  cli::Excludes(null, {file});
  if (scan.Wants("-p,--priority"))
    app->add_option("-p,--priority", a.msg.priority, "Priority 0..7, higher first (default 3)")
        ->check(cli::WholeNumber(0, 7));
  if (scan.Wants("-L,--label"))
    app->add_option("-L,--label", a.msg.label, "Label, at most 250 characters")->type_name("TEXT");
  if (scan.Wants("-c,--correlation"))
    app->add_option("-c,--correlation", a.msg.correlation,
                    "Correlation id: 40 hex digits or a message id")
        ->type_name("ID");
  if (scan.Wants("--app"))
    app->add_option("--app", a.msg.app, "Application-specific 32-bit number (PROPID_M_APPSPECIFIC)")
        ->type_name("N")
        ->check(cli::WholeNumber(0, UINT32_MAX));
  if (scan.Wants("--body-type"))
    app->add_option("--body-type", a.msg.body_type,
                    "Body type: bytes, text, json, xml or a VT number")
        ->type_name("TYPE");
  if (scan.Wants("--ttrq"))
    app->add_option("--ttrq", a.msg.ttrq, "Time to reach the queue (stored as a deadline)")
        ->type_name("DURATION");
  if (scan.Wants("--ttbr"))
    app->add_option("--ttbr", a.msg.ttbr, "Time to be received (stored as a deadline)")
        ->type_name("DURATION");
  if (scan.Wants("--journal"))
    app->add_flag("--journal", a.msg.journal, "Ask for source journaling (MQMSG_JOURNAL)");
  if (scan.Wants("--deadletter"))
    app->add_flag("--deadletter", a.msg.deadletter, "Ask for dead-lettering (MQMSG_DEADLETTER)");
  if (scan.Wants("--admin-queue"))
    app->add_option("--admin-queue", a.msg.admin_queue, "Queue for acknowledgements")
        ->type_name("QUEUE");
  if (scan.Wants("--ack"))
    app->add_option("--ack", a.msg.ack,
                    "Acknowledgement level: none, full-reach-queue, full-receive, "
                    "nack-reach-queue, nack-receive (joined by ',')")
        ->type_name("LEVEL");
  if (scan.Wants("--response-queue"))
    app->add_option("--response-queue", a.msg.response_queue, "Queue for replies")
        ->type_name("QUEUE");
  if (scan.Wants("--express"))
    app->add_flag("--express", a.msg.express,
                  "One disk sync per commit, not two (MQMSG_DELIVERY_EXPRESS)");
  if (scan.Wants("--hash-algorithm"))
    app->add_option("--hash-algorithm", a.msg.hash_algorithm,
                    "Hash algorithm for authentication: md5, sha1, sha256, ... or a number "
                    "(PROPID_M_HASH_ALG)")
        ->type_name("ALG");
  if (scan.Wants("--provider-type"))
    app->add_option("--provider-type", a.msg.provider_type,
                    "Cryptographic provider type: rsa-full, dss, ... or a number "
                    "(PROPID_M_PROV_TYPE)")
        ->type_name("TYPE");
  if (scan.Wants("--provider-name"))
    app->add_option("--provider-name", a.msg.provider_name,
                    "Cryptographic provider name (PROPID_M_PROV_NAME)")
        ->type_name("NAME");
  if (scan.Wants("--extension"))
    app->add_option("--extension", a.msg.extension,
                    "Extension bytes outside the body: hex digits, or @FILE (PROPID_M_EXTENSION)")
        ->type_name("HEX|@FILE");
  if (scan.Wants("--print-id"))
    app->add_flag("--print-id", a.print_id, "Print the id of each message sent");
  if (scan.Wants("--tx"))
    app->add_flag("--tx", a.tx,
                  "One transaction for everything this invocation sends: all visible at once or "
                  "none (Eod First/Last, transaction id and sequence numbers recorded)");
  if (scan.Wants("--dedup"))
    app->add_option("--dedup", a.dedup,
                    "A second send with KEY within the queue's dedup window is accepted and "
                    "dropped")
        ->type_name("KEY");
  CLI::Option* delay = nullptr;
  if (scan.Wants("--delay"))
    delay = app->add_option("--delay", a.msg.delay, "Not visible to readers before DURATION")
                ->type_name("DURATION");
  if (scan.Wants("--at")) {
    auto* at =
        app->add_option("--at", a.msg.at, "Not visible to readers before TIME (RFC 3339 or @EPOCH)")
            ->type_name("TIME");
    cli::Excludes(at, {delay});
  }
  if (scan.Wants("--conversation"))
    app->add_option("--conversation", a.msg.conversation,
                    "Send on conversation HANDLE (a UUID); 'new' begins one and prints its handle")
        ->type_name("HANDLE");
  if (scan.Wants("--group"))
    app->add_option("--group", a.msg.group,
                    "Conversation group of the conversation (default: its own handle); moves an "
                    "existing conversation to group ID")
        ->type_name("ID");
  if (scan.Wants("--message-type"))
    app->add_option("--message-type", a.msg.message_type,
                    "Service Broker message type (default DEFAULT with --conversation); its "
                    "validation checks the body")
        ->type_name("NAME");
  if (scan.Wants("--service"))
    app->add_option("--service", a.msg.service, "Service name of a new conversation")
        ->type_name("NAME");
  if (scan.Wants("--contract"))
    app->add_option("--contract", a.msg.contract, "Contract name of a new conversation")
        ->type_name("NAME");
  if (scan.Wants("--create"))
    app->add_flag("--create", a.store.create, "Create the queue (and a named store) if missing");
  CLI::Option* reply_to = nullptr;
  if (scan.Wants("--reply-to"))
    reply_to =
        app->add_option("--reply-to", a.reply_to,
                        "Reply to request MSGID: send to its response queue with correlation id "
                        "MSGID")
            ->type_name("MSGID");
  if (scan.Wants("--reply-to-env")) {
    auto* env = app->add_flag(
        "--reply-to-env", a.reply_to_env,
        "Reply to the request described by MQ_ID and MQ_RESPONSE_QUEUE (inside --exec)");
    cli::Excludes(env, {reply_to});
  }
  return app;
}

int Run(int argc, char** argv) {
  cli::SetTool("mq-send");
  std::signal(SIGPIPE, SIG_IGN);
  // Only the options the command line names are built; all of them when it names one that
  // mq-send lacks, so that CLI11 reports it as usual (cli::OptionScan).
  cli::OptionScan scan(argc, argv);
  SendArgs a;
  std::unique_ptr<CLI::App> app;
  for (;;) {
    app = BuildApp(a, scan);
    if (scan.Complete()) break;
    scan.WantAll();
  }
  if (int rc = cli::Parse(*app, argc, argv); rc >= 0) return rc;
  a.has_body = app->count("BODY") > 0;
  bool replying = !a.reply_to.empty() || a.reply_to_env;
  if (replying) {
    // The queue is the request's response queue: a lone argument is the body.
    if (app->count("BODY"))
      return cli::Fail(
          Status::InvalidArg("with --reply-to the queue is the request's response queue: give "
                             "only a body"));
    if (app->count("QUEUE")) {
      a.body = std::move(a.queue);
      a.queue.clear();
      a.has_body = true;
    }
    if (!a.msg.correlation.empty())
      return cli::Fail(
          Status::InvalidArg("--correlation and --reply-to both set the correlation id"));
  } else if (!app->count("QUEUE")) {
    return cli::Fail(Status::InvalidArg("QUEUE is required"));
  }
  if (a.has_body && (!a.file.empty() || a.lines || a.null))
    return cli::Fail(Status::InvalidArg("give the body as an argument, -f, or on stdin"));

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
  // a,b,LINK:c: a copy in each, in one transaction.
  auto dests = ParseDestinations(a.queue);
  if (!dests.ok()) return cli::Fail(dests.status());
  // What errors name when no queue of the list is to blame.
  std::string subject =
      dests->size() == 1 && dests->front().url.empty() ? dests->front().ref.Full() : a.queue;
  if (!a.dedup.empty() && (a.lines || a.null) && !a.tx)
    return cli::Fail(
        Status::InvalidArg("--dedup with -l or -0 needs --tx (the key names the whole send)"));
  auto proto = BuildPrototype(a.msg);
  if (!proto.ok()) return cli::Fail(proto.status().WithSubject(subject));
  if (!reply_correlation.empty()) proto->correlation_id = reply_correlation;

  // Read a single body before touching the store, so that a bad file changes nothing.
  std::string body;
  if (a.has_body) {
    body = std::move(a.body);
  } else if (!a.lines && !a.null) {
    if (Status s = ReadBody(a.file, body); !s.ok()) return cli::Fail(s);
  }

  auto store =
      opened ? Result<std::unique_ptr<Store>>(std::move(opened)) : cli::OpenStore(a.store);
  if (!store.ok()) return cli::Fail(store.status());
  // DIRECT=HTTP://HOST/msmq/private$/Q: through the link with that --url.
  if (Status s = (*store)->ResolveLinkUrls(*dests); !s.ok()) return cli::Fail(s);
  if (a.msg.express) {
    Status s = (*store)->SetExpress(true);
    if (!s.ok()) return cli::Fail(s);
  }
  BatchOptions o;
  o.append.create_queue = a.store.create;
  o.append.transactional = a.tx;
  o.append.priority_given = cli::CountOf(*app, "--priority") > 0;
  o.append.dedup_key = a.dedup;
  o.append.new_conversation = a.msg.conversation == "new";
  o.print_ids = a.print_id;
  o.note = [&subject](const std::string& text) { cli::Note(subject, text); };
  BatchSender sender(**store, std::move(*dests), *proto, std::move(o));
  Status s;
  char sep = a.lines ? '\n' : '\0';
  if (a.tx && (a.lines || a.null)) {
    SpoolSource src(0, *proto, sep);
    s = src.Spool();
    if (s.ok()) s = sender.Append(src);
  } else if (a.lines || a.null) {
    s = SendRecords(0, sep, sender);
  } else {
    sender.Add(body);
    s = sender.Commit();
  }
  if (!s.ok()) return cli::ExitNow(cli::Fail(s.WithSubject(subject)));
  return cli::ExitNow(0);
}

}  // namespace
}  // namespace mq

int main(int argc, char** argv) { return mq::Run(argc, argv); }
