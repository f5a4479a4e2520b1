// mq-admin link add NAME --via 'COMMAND [ARG...]' [--return LINK]
// mq-admin link add NAME --url http[s]://HOST[:PORT]/msmq [--receipts-url URL]
// mq-admin link set NAME [--via 'COMMAND [ARG...]' | --url URL] [--receipts-url URL]
//                        [--return LINK]
// mq-admin link delete NAME [--force]
// mq-admin link list [--json | --format text|json|prometheus]
// mq-admin link stat NAME [--json]
//   Links to other stores (mq(7) "Transfer between machines"). A link is a command whose
//   stdin and stdout reach `mq-admin accept` on the other store, e.g.
//   `ssh host mq-admin --store /srv/mq accept`; mq-send LINK:QUEUE stores messages in the
//   link's outgoing queue out;LINK and mq-admin forward LINK moves them. An HTTP link
//   (--url) reaches MSMQ's HTTP transport instead (mq(7) "MSMQ over HTTP"): forward posts
//   SRMP documents to the URL, and the far side's stream receipts come back to --receipts-url,
//   a mq-admin serve of this store.
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "admin.hpp"
#include "base/codec.hpp"
#include "base/units.hpp"

namespace mq::admin {

namespace {

struct LinkArgs {
  std::string name;
  std::string via;
  std::string return_link;
  std::string url;
  std::string receipts_url;
  bool force = false;
  bool json = false;
  std::string format;
};

std::string When(int64_t ms) { return ms ? FormatTime(ms) : "-"; }

nlohmann::ordered_json ToJson(const LinkInfo& l) {
  auto t = [](int64_t ms) {
    return ms ? nlohmann::ordered_json(FormatTime(ms)) : nlohmann::ordered_json(nullptr);
  };
  return {{"link", l.name},
          {"via", l.via.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(l.via)},
          {"url", l.url.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(l.url)},
          {"receipts_url", l.receipts_url.empty() ? nlohmann::ordered_json(nullptr)
                                                  : nlohmann::ordered_json(l.receipts_url)},
          {"receipted", l.receipted},
          {"via_uid",
           l.via_uid >= 0 ? nlohmann::ordered_json(l.via_uid) : nlohmann::ordered_json(nullptr)},
          {"return", l.return_link},
          {"outgoing_queue", "out;" + l.name},
          {"backlog", l.backlog},
          {"backlog_bytes", l.backlog_bytes},
          {"in_flight", l.in_flight},
          {"acknowledged", l.acked},
          {"refused", l.refused},
          {"last_ack", t(l.last_ack)},
          {"connected_since", t(l.connected_since)},
          {"forward_pid", l.connected_since ? nlohmann::ordered_json(l.forward_pid)
                                            : nlohmann::ordered_json(nullptr)},
          {"peer", l.peer},
          {"last_error", l.last_error},
          {"last_error_time", t(l.last_error_time)},
          {"created", t(l.created)}};
}

int Print(Store& store, const std::vector<LinkInfo>& links, const std::string& format,
          bool one) {
  FdWriter out(1, "stdout");
  if (format == "json") {
    for (const LinkInfo& l : links) out.Append(ToJson(l).dump() + "\n");
  } else if (format == "prometheus") {
    struct M {
      const char* name;
      const char* help;
      std::function<std::string(const LinkInfo&)> v;
      const char* type = "gauge";
    };
    std::vector<M> ms = {
        {"mq_link_backlog_messages", "Messages waiting in the link's outgoing queue.",
         [](const LinkInfo& l) { return std::to_string(l.backlog); }},
        {"mq_link_backlog_bytes", "Bytes of records waiting in the link's outgoing queue.",
         [](const LinkInfo& l) { return std::to_string(l.backlog_bytes); }},
        {"mq_link_in_flight_messages", "Messages sent and not yet acknowledged.",
         [](const LinkInfo& l) { return std::to_string(l.in_flight); }},
        {"mq_link_acknowledged_total", "Messages the far side has answered (stored or refused).",
         [](const LinkInfo& l) { return std::to_string(l.acked); }, "counter"},
        {"mq_link_refused_total", "Messages the far side refused (NACKed here).",
         [](const LinkInfo& l) { return std::to_string(l.refused); }, "counter"},
        {"mq_link_connected", "1 while a forward is connected.",
         [](const LinkInfo& l) { return std::string(l.connected_since ? "1" : "0"); }},
        {"mq_link_last_ack_timestamp_seconds", "When the far side last acknowledged; 0: never.",
         [](const LinkInfo& l) { return fmt::format("{:.3f}", l.last_ack / 1000.0); }},
        {"mq_link_last_error_timestamp_seconds", "When the link last failed; 0: never.",
         [](const LinkInfo& l) { return fmt::format("{:.3f}", l.last_error_time / 1000.0); }},
    };
    for (const M& m : ms) {
      out.Append(
          fmt::format("# HELP {} {}\n# TYPE {} {}\n", m.name, m.help, m.name, m.type));
      for (const LinkInfo& l : links)
        out.Append(fmt::format("{}{{store=\"{}\",link=\"{}\"}} {}\n", m.name,
                               PromEscape(store.dir()), PromEscape(l.name), m.v(l)));
    }
  } else if (one) {
    for (const LinkInfo& l : links) {
      out.Append(fmt::format("link:            {}\n", l.name));
      if (!l.via.empty()) out.Append(fmt::format("via:             {}\n", l.via));
      if (!l.url.empty()) {
        out.Append(fmt::format("url:             {}\n", l.url));
        out.Append(
            fmt::format("receipts url:    {}\n", l.receipts_url.empty() ? "-" : l.receipts_url));
        out.Append(fmt::format("receipted:       {}\n", l.receipted));
      }
      if (l.via_uid >= 0)
        out.Append(
            fmt::format("{} set by:      uid {}\n", l.url.empty() ? "via" : "url", l.via_uid));
      if (!l.return_link.empty()) out.Append(fmt::format("return:          {}\n", l.return_link));
      out.Append(fmt::format("outgoing queue:  out;{}\n", l.name));
      out.Append(fmt::format("backlog:         {} messages, {} bytes\n", l.backlog,
                             l.backlog_bytes));
      out.Append(fmt::format("in flight:       {}\n", l.in_flight));
      out.Append(fmt::format("acknowledged:    {} ({} refused)\n", l.acked, l.refused));
      out.Append(fmt::format("last ack:        {}\n", When(l.last_ack)));
      out.Append(fmt::format("connected since: {}\n",
                             l.connected_since
                                 ? fmt::format("{} (forward pid {})", FormatTime(l.connected_since),
                                               l.forward_pid)
                                 : std::string("-")));
      out.Append(fmt::format("peer store:      {}\n", l.peer.empty() ? "-" : l.peer));
      out.Append(fmt::format("last error:      {}\n",
                             l.last_error.empty()
                                 ? std::string("-")
                                 : fmt::format("{} ({})", PeerText(l.last_error),
                                               When(l.last_error_time))));
    }
  } else {
    out.Append(fmt::format("{:<20} {:>9} {:>9} {:<24} {:<24} {}\n", "LINK", "BACKLOG",
                           "IN-FLIGHT", "LAST-ACK", "CONNECTED-SINCE", "LAST-ERROR"));
    for (const LinkInfo& l : links)
      out.Append(fmt::format("{:<20} {:>9} {:>9} {:<24} {:<24} {}\n", l.name, l.backlog,
                             l.in_flight, When(l.last_ack), When(l.connected_since),
                             l.last_error.empty() ? "-" : PeerText(l.last_error)));
  }
  Status s = out.Flush();
  return s.ok() || s.code() == Code::kBrokenPipe ? 0 : cli::Fail(s);
}

}  // namespace

Command SetupLink(CLI::App& app, Context&) {
  auto a = std::make_shared<LinkArgs>();
  auto* sub = app.add_subcommand("link", "Links to other stores: add, set, delete, list, stat");
  sub->require_subcommand(1);
  auto* add = sub->add_subcommand("add", "Add a link and its outgoing queue out;NAME");
  add->add_option("NAME", a->name, "The link's name (remote queues are NAME:QUEUE)")->required();
  add->add_option("--via", a->via,
                  "The command (run with /bin/sh -c) whose stdin and stdout reach mq-admin "
                  "accept at the far store")
      ->type_name("COMMAND");
  add->add_option("--url", a->url,
                  "An HTTP link: the far machine's MSMQ HTTP endpoint, http[s]://HOST[:PORT]/msmq "
                  "(an MSMQ, or an mq-admin serve)")
      ->type_name("URL");
  add->add_option("--receipts-url", a->receipts_url,
                  "Where the far side posts its stream receipts: a queue URL of this store's "
                  "mq-admin serve, e.g. http://THIS-HOST:8080/msmq/private$/order_queue$")
      ->type_name("URL");
  add->add_option("--return", a->return_link,
                  "The far store's link back here: response and admin queues travel as "
                  "LINK:QUEUE")
      ->type_name("LINK");
  auto* set = sub->add_subcommand("set", "Change a link's command or return link");
  set->add_option("NAME", a->name, "The link")->required();
  auto* set_via = set->add_option("--via", a->via, "The command")->type_name("COMMAND");
  auto* set_url = set->add_option("--url", a->url, "The far MSMQ HTTP endpoint (an HTTP link's)")
                      ->type_name("URL");
  auto* set_receipts = set->add_option("--receipts-url", a->receipts_url,
                                       "Where the far side posts stream receipts ('' for none)")
                           ->type_name("URL");
  auto* set_ret =
      set->add_option("--return", a->return_link, "The far store's link back ('' for none)")
          ->type_name("LINK");
  auto* del = sub->add_subcommand("delete", "Delete a link and its (empty) outgoing queue");
  del->add_option("NAME", a->name, "The link")->required();
  del->add_flag("--force", a->force,
                "Delete even with messages waiting: they fail as purged (NACK_PURGED)");
  auto* list = sub->add_subcommand("list", "Links: backlog, in flight, last ack, connection");
  auto* stat = sub->add_subcommand("stat", "One link in detail");
  stat->add_option("NAME", a->name, "The link")->required();
  for (auto* c : {list, stat}) {
    auto* json = c->add_flag("--json", a->json, "One JSON object per link");
    c->add_option("--format", a->format, "Output format: text (default), json or prometheus")
        ->type_name("NAME")
        ->check(CLI::IsMember({"json", "prometheus", "text"}))
        ->excludes(json);
  }
  return {sub,
          [a, add, set, set_via, set_url, set_receipts, set_ret, del, list, stat](Context& ctx) {
            if (!a->return_link.empty() && !IsValidQueueName(a->return_link))
              return cli::Fail(Status::InvalidArg("invalid --return link name", a->return_link));
            if (add->parsed() && a->via.empty() && a->url.empty())
              return cli::Fail(
                  Status::InvalidArg("--via or --url is required (see mq-admin link add --help)"));
            bool reading = list->parsed() || stat->parsed();
            auto store = reading ? ctx.OpenForReading() : ctx.Open();
            if (!store.ok()) return cli::Fail(store.status());
            Store& st = **store;
            if (add->parsed()) {
              LinkSettings s;
              if (!a->via.empty()) s.via = a->via;
              if (!a->url.empty()) s.url = a->url;
              if (!a->receipts_url.empty()) s.receipts_url = a->receipts_url;
              if (!a->return_link.empty()) s.return_link = a->return_link;
              Status r = st.AddLink(a->name, s);
              return r.ok() ? 0 : cli::Fail(r);
            }
            if (set->parsed()) {
              LinkSettings s;
              if (set_via->count()) s.via = a->via;
              if (set_ret->count()) s.return_link = a->return_link;
              if (set_url->count()) s.url = a->url;
              if (set_receipts->count()) s.receipts_url = a->receipts_url;
              if (!s.via && !s.return_link && !s.url && !s.receipts_url)
                return cli::Fail(Status::InvalidArg("nothing to change: pass --via, --url, "
                                                    "--receipts-url or --return"));
              Status r = st.SetLink(a->name, s);
              return r.ok() ? 0 : cli::Fail(r);
            }
            if (del->parsed()) {
              Status r = st.DeleteLink(a->name, a->force);
              return r.ok() ? 0 : cli::Fail(r);
            }
            std::string format = a->json ? "json" : a->format.empty() ? "text" : a->format;
            if (list->parsed()) {
              auto links = st.ListLinks();
              if (!links.ok()) return cli::Fail(links.status());
              return Print(st, *links, format, false);
            }
            (void)stat;
            auto l = st.GetLink(a->name);
            if (!l.ok()) return cli::Fail(l.status());
            return Print(st, {*l}, format, true);
          }};
}

}  // namespace mq::admin
