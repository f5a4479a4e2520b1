// mq-admin serve --http ADDR:PORT [--queue Q]... [--max-connections N]
//                [--request-timeout DURATION] [--idle-timeout DURATION]
//                [--tls-cert FILE --tls-key FILE [--client-ca FILE]]
//   MSMQ's HTTP transport, the receiving end: takes the SRMP messages a Windows machine's
//   MSMQ (or anything that speaks [MC-MQSRM]) POSTs to http://HOST:PORT/msmq/private$/QUEUE
//   and stores them in QUEUE. Runs until SIGTERM or SIGINT. Under systemd socket activation
//   (LISTEN_FDS) it serves the sockets it is given. The engine: lib/link/http_endpoint.hpp.
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <iterator>
#include <tuple>

#include <fmt/format.h>

#include "admin.hpp"
#include "base/units.hpp"
#include "link/http_endpoint.hpp"

namespace mq::admin {

namespace {

// A PEM file, whole (a few KiB); the error names the option and the file.
Result<std::string> ReadPem(const std::string& path, const char* option) {
  std::ifstream in(path, std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (!in.good() && !in.eof())
    return Status::InvalidArg(fmt::format("{} {}: cannot be read", option, path));
  if (text.find("-----BEGIN ") == std::string::npos)
    return Status::InvalidArg(fmt::format("{} {}: no PEM in it", option, path));
  return text;
}

struct ServeArgs {
  std::string http;
  std::string tls_cert, tls_key, client_ca;
  std::vector<std::string> queues;
  unsigned max_connections = 64;
  std::string request_timeout = "60s";
  std::string idle_timeout = "2m";
};

int RunServe(Context& ctx, const ServeArgs& a) {
  link::HttpServeOptions o;
  o.max_connections = a.max_connections;
  for (auto [text, out] : {std::pair{&a.request_timeout, &o.request_timeout_ms},
                           std::pair{&a.idle_timeout, &o.idle_timeout_ms}}) {
    auto ms = ParseDuration(*text);
    if (!ms.ok()) return cli::Fail(ms.status());
    if (*ms <= 0)
      return cli::Fail(Status::InvalidArg(
          fmt::format("a timeout of '{}' would end every request: give a duration", *text)));
    *out = *ms;
  }
  for (const std::string& q : a.queues) {
    auto name = link::QueueOfSrmpPath("/msmq/" + q);
    if (!name.ok()) return cli::Fail(name.status());
    o.queues.push_back(*name);
  }
  if (a.tls_cert.empty() != a.tls_key.empty())
    return cli::Fail(Status::InvalidArg("--tls-cert and --tls-key go together"));
  if (!a.client_ca.empty() && a.tls_cert.empty())
    return cli::Fail(Status::InvalidArg("--client-ca needs --tls-cert and --tls-key (HTTPS)"));
  for (auto [path, option, out] : {std::tuple{&a.tls_cert, "--tls-cert", &o.tls_cert_pem},
                                   std::tuple{&a.tls_key, "--tls-key", &o.tls_key_pem},
                                   std::tuple{&a.client_ca, "--client-ca", &o.client_ca_pem}}) {
    if (path->empty()) continue;
    auto pem = ReadPem(*path, option);
    if (!pem.ok()) return cli::Fail(pem.status());
    *out = std::move(*pem);
  }
  auto activated = link::SystemdListenFds();
  if (!activated.ok()) return cli::Fail(activated.status());
  if (!activated->empty() && !a.http.empty())
    return cli::Fail(Status::InvalidArg(
        "--http and socket activation (LISTEN_FDS) both name sockets: give one"));
  if (activated->empty() && a.http.empty())
    return cli::Fail(Status::InvalidArg("give --http ADDR:PORT (or start it from a systemd "
                                        "socket unit)"));
  if (activated->empty()) {
    auto fds = link::ListenTcp(a.http);
    if (!fds.ok()) return cli::Fail(fds.status());
    o.listen_fds = *fds;
  } else {
    o.listen_fds = *activated;
  }
  auto store = ctx.Open();
  if (!store.ok()) return cli::Fail(store.status());
  if (cli::StopOnSignals() < 0)
    return cli::Fail(ErrnoStatus(errno, "pipe", "cannot set up signal handling"));
  ::signal(SIGPIPE, SIG_IGN);  // a client that went away is EPIPE
  o.stop = &cli::Stop();
  o.note = [](const std::string& text) { cli::Note("serve", text); };
  for (int fd : o.listen_fds) cli::Note("serve", "listening on " + link::SocketName(fd));
  link::HttpServeStats stats;
  Status s = link::ServeHttp(**store, o, &stats);
  cli::Note("serve", fmt::format("{} requests: {} messages stored, {} replays, {} ignored "
                                 "after a gap, {} receipts received, {} receipts sent, "
                                 "{} refused",
                                 stats.requests, stats.stored, stats.duplicates, stats.gaps,
                                 stats.receipts, stats.receipts_sent, stats.refused));
  if (activated->empty())
    for (int fd : o.listen_fds) ::close(fd);
  return s.ok() ? 0 : cli::Fail(s);
}

}  // namespace

Command SetupServe(CLI::App& app, Context&) {
  auto a = std::make_shared<ServeArgs>();
  auto* sub = app.add_subcommand("serve", "Take the messages MSMQ sends over HTTP (SRMP POSTs to "
                                          "/msmq/private$/QUEUE) and store them, until SIGTERM");
  sub->add_option("--http", a->http,
                  "Listen on ADDR:PORT (127.0.0.1:8080, [::1]:8080, :8080 for every "
                  "address; port 0 picks a free one)")
      ->type_name("ADDR:PORT");
  sub->add_option("--tls-cert", a->tls_cert,
                  "Serve HTTPS with this certificate (PEM; the chain after it), with --tls-key")
      ->type_name("FILE");
  sub->add_option("--tls-key", a->tls_key, "The private key of --tls-cert (PEM)")
      ->type_name("FILE");
  sub->add_option("--client-ca", a->client_ca,
                  "Require a client certificate signed by these CA certificates (PEM); others "
                  "are answered 403")
      ->type_name("FILE");
  sub->add_option("--queue", a->queues,
                  "Take messages for QUEUE only (repeatable; default: every queue)")
      ->type_name("QUEUE");
  sub->add_option("--max-connections", a->max_connections,
                  "Connections served at once, at most (default 64; more wait)")
      ->type_name("N")
      ->check(cli::WholeNumber(1, 100000));
  sub->add_option("--request-timeout", a->request_timeout,
                  "Answer 408 to a request not read whole within DURATION (default 60s)")
      ->type_name("DURATION");
  sub->add_option("--idle-timeout", a->idle_timeout,
                  "Close a connection silent for DURATION (default 2m)")
      ->type_name("DURATION");
  return {sub, [a](Context& ctx) { return RunServe(ctx, *a); }};
}

}  // namespace mq::admin
