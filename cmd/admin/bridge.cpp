// mq-admin bridge out QUEUE --amqp URL --exchange X [--routing-key K] [--once|--follow]
// mq-admin bridge in QUEUE --amqp URL --from AMQP-QUEUE [--prefetch N] [--once|--follow]
//   Move messages between an mq queue and RabbitMQ, exactly once in both directions.
//
// The options, parsed into bridge::BridgeOptions, and one call of the engine
// (lib/bridge/bridge.hpp has the protocol) over a rabbitmq-c connection (bridge::LinkConnector);
// its notes go to stderr, its Status to CLI.md's exit table. SIGTERM or SIGINT stop it: the
// batch in flight is finished, then exit 0.
#include <algorithm>
#include <cerrno>
#include <cstdlib>

#include "admin.hpp"
#include "base/units.hpp"
#include "bridge/amqp_link.hpp"
#include "bridge/bridge.hpp"

namespace mq::admin {

namespace {

struct BridgeArgs : MoverArgs {
  std::string queue;
  std::string amqp;
  std::string credentials;
  std::string cacert, cert, key;
  bool declare = false;
  uint32_t batch = 0;  // 0: the direction's default
  // out
  std::string exchange;
  std::string routing_key;
  // in
  std::string from;
  uint32_t prefetch = 1000;
  std::string dedup_window = "7d";
};

void AddCommonOptions(CLI::App& sub, BridgeArgs& a) {
  sub.add_option("QUEUE", a.queue, "The mq queue")->required();
  sub.add_option("--amqp", a.amqp,
                 "Broker URL: amqp://[USER[:PASSWORD]@]HOST[:PORT][/VHOST] or amqps://... "
                 "(default $MQ_AMQP_URL)")
      ->type_name("URL");
  sub.add_option("--credentials", a.credentials,
                 "File whose first line is USER:PASSWORD (overrides the URL's)")
      ->type_name("FILE");
  sub.add_option("--cacert", a.cacert, "amqps: CA certificates (PEM) to verify the broker")
      ->type_name("FILE");
  sub.add_option("--cert", a.cert, "amqps: client certificate (PEM)")->type_name("FILE");
  sub.add_option("--key", a.key, "amqps: client private key (PEM)")->type_name("FILE");
  AddMoverOptions(sub, a, "the source");
  sub.add_flag("--declare", a.declare,
               "Declare what the bridge uses: a durable quorum queue (and, for out, a direct "
               "exchange and the binding)");
  sub.add_option("--batch", a.batch,
                 "Messages per store transaction (out: per lease and confirm round, default "
                 "500; in: default 500)")
      ->type_name("N")
      ->check(cli::WholeNumber(1, 100000));
}

// The engine's options from the command line's, in the order the checks ran before the
// engine moved to lib/ (so that a command line with several faults reports the same one).
Result<bridge::BridgeOptions> MakeBridgeOptions(const BridgeArgs& a, const QueueRef& ref,
                                                bridge::Endpoint& ep) {
  // rabbitmq-c is loaded now, not at start-up (amqp_link.hpp).
  MQ_RETURN_IF_ERROR(bridge::LoadRabbitmq());
  std::string url = a.amqp;
  if (url.empty())
    if (const char* env = std::getenv("MQ_AMQP_URL")) url = env;
  if (url.empty()) return Status::InvalidArg("no broker: pass --amqp URL or set MQ_AMQP_URL");
  auto parsed = bridge::ParseEndpoint(url, a.credentials);
  if (!parsed.ok()) return parsed.status();
  ep = std::move(*parsed);
  ep.cacert = a.cacert;
  ep.cert = a.cert;
  ep.key = a.key.empty() ? a.cert : a.key;
  bridge::BridgeOptions o;
  o.queue = ref;
  o.broker = ep.url_shown;
  auto m = ParseMoverOptions(a);
  if (!m.ok()) return m.status();
  o.timeout_ms = m->timeout_ms;
  auto w = ParseDuration(a.dedup_window);
  if (!w.ok()) return w.status();
  if (*w <= 0) return Status::InvalidArg("--dedup-window must be a positive duration");
  o.dedup_window_ms = *w;
  o.retry_ms = m->retry_ms;
  o.follow = m->follow;
  o.declare = a.declare;
  if (a.batch) o.batch = a.batch;
  o.exchange = a.exchange;
  o.routing_key = a.routing_key;
  o.from = a.from;
  o.prefetch = static_cast<uint16_t>(std::min<uint32_t>(a.prefetch, 65535));
  return o;
}

int RunBridge(Context& ctx, const BridgeArgs& a, bool out) {
  auto ref = cli::ParseQueueArg(a.queue);
  if (!ref.ok()) return cli::Fail(ref.status());
  if (ref->IsSub() || ref->IsSystem())
    return cli::Fail(Status::UnsupportedFormatnameOperation(
        "a bridge moves messages of a queue, not of a journal, "
        "subqueue or system queue",
        ref->Full()));
  auto store = ctx.Open();
  if (!store.ok()) return cli::Fail(store.status());
  bridge::Endpoint ep;
  auto o = MakeBridgeOptions(a, *ref, ep);
  if (!o.ok()) return cli::Fail(o.status());
  if (cli::StopOnSignals() < 0)
    return cli::Fail(ErrnoStatus(errno, "pipe", "cannot set up signal handling"));
  bridge::LinkConnector connector(std::move(ep), o->timeout_ms);
  auto note = [](const bridge::BridgeNote& n) { cli::Note(n.subject, n.text); };
  Status s = out ? bridge::RunBridgeOut(**store, *o, connector, cli::Stop(), note)
                 : bridge::RunBridgeIn(**store, *o, connector, cli::Stop(), note);
  return s.ok() ? 0 : cli::Fail(s);
}

}  // namespace

Command SetupBridge(CLI::App& app, Context&) {
  auto out_args = std::make_shared<BridgeArgs>();
  auto in_args = std::make_shared<BridgeArgs>();
  auto* sub = app.add_subcommand("bridge", "Move messages to and from RabbitMQ, exactly once");
  sub->require_subcommand(1);
  auto* out = sub->add_subcommand("out", "Publish the messages of QUEUE to an AMQP exchange");
  AddCommonOptions(*out, *out_args);
  out->add_option("--exchange", out_args->exchange,
                  "AMQP exchange to publish to ('' is the default exchange, which routes by "
                  "queue name)")
      ->type_name("X")
      ->required();
  out->add_option("--routing-key", out_args->routing_key,
                  "Routing key (default: the queue's name); with --declare, also the name of "
                  "the quorum queue")
      ->type_name("K");
  auto* in = sub->add_subcommand("in", "Consume an AMQP queue into QUEUE");
  AddCommonOptions(*in, *in_args);
  in->add_option("--from", in_args->from, "AMQP queue to consume from")
      ->type_name("AMQP-QUEUE")
      ->required();
  in->add_option("--prefetch", in_args->prefetch,
                 "Deliveries the broker may send ahead of acknowledgements (default 1000)")
      ->type_name("N")
      ->check(cli::WholeNumber(1, 65535));
  in->add_option("--dedup-window", in_args->dedup_window,
                 "How long each delivery's message_id is remembered, so that a redelivery "
                 "is stored once (default 7d)")
      ->type_name("DURATION");
  return {sub, [out, out_args, in_args](Context& ctx) {
            bool is_out = out->parsed();
            return RunBridge(ctx, is_out ? *out_args : *in_args, is_out);
          }};
}

}  // namespace mq::admin
