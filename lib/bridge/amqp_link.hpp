// amqp_link.hpp: one connection to a RabbitMQ broker through rabbitmq-c, for mq-admin bridge:
// a publisher channel in confirm mode, or a consumer with manual acknowledgements. The only
// file that includes rabbitmq-c's headers; it converts amqp_map.hpp's AmqpMessage to and
// from rabbitmq-c's structures.
//
// Errors, as Status codes that CLI.md's exit table knows (lib/base/status.cpp maps them):
//   - a URL that does not parse, a credentials file that does not: E_INVALIDARG (2)
//   - login refused (403 ACCESS_REFUSED), a vhost or resource the user may not use:
//     MQ_ERROR_ACCESS_DENIED (4)
//   - a missing exchange or queue (404 NOT_FOUND), a message no queue is bound for (a
//     mandatory publish returned): MQ_ERROR_QUEUE_NOT_FOUND (3)
//   - a broker that refuses a message or a declaration (basic.nack, 406 PRECONDITION_FAILED
//     ...): MQ_BROKER_REFUSED (5)
//   - a broker that cannot be reached, or a connection lost: MQ_BROKER_UNAVAILABLE (10);
//     Transient() (channel.hpp) tells the bridge that a reconnection may cure it.
// Link is the bridge engines' Channel (channel.hpp has the contract), LinkConnector their
// Connector.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/status.hpp"
#include "bridge/amqp_map.hpp"
#include "bridge/channel.hpp"

namespace mq::bridge {

// The RabbitMQ client library, loaded with dlopen when a bridge starts (not linked: the
// other subcommands do not pay for it at start-up). Call before anything else here; an error
// (the library missing or too old) is MQ_ERROR, exit 10.
constexpr const char* kRabbitmqLibrary = "librabbitmq.so.4";
Status LoadRabbitmq();

// Where to connect: parsed from an amqp:// or amqps:// URL, with the user and password
// from a credentials file if given (they then override the URL's).
struct Endpoint {
  std::string host = "localhost";
  int port = 5672;
  std::string vhost = "/";
  std::string user = "guest";
  std::string password = "guest";
  bool tls = false;
  std::string cacert, cert, key;  // TLS: CA bundle, client certificate and key (PEM files)
  std::string url_shown;          // the URL without its password, for messages
};

// Parses `url` (amqp://[USER[:PASSWORD]@]HOST[:PORT][/VHOST], amqps:// for TLS, the vhost
// percent-encoded: %2F is "/"). `credentials_file`, if not empty, holds one line USER:PASSWORD.
Result<Endpoint> ParseEndpoint(const std::string& url, const std::string& credentials_file);

// For tests: `m` through rabbitmq-c's structures and the wire encoding of a content header's
// properties (headers table included), and back, as a broker would pass it on.
AmqpMessage ThroughWire(const AmqpMessage& m);

class Link : public Channel {
 public:
  ~Link() override;
  Link(const Link&) = delete;
  Link& operator=(const Link&) = delete;

  // Connects, logs in and opens channel 1, within `timeout_ms` for the socket.
  static Result<std::unique_ptr<Link>> Connect(const Endpoint& ep, int timeout_ms);

  // --declare: a durable exchange of type direct (unless `exchange` is empty: the default
  // exchange), a durable quorum queue, and its binding with `routing_key`. Declarations that
  // exist with other arguments are the broker's 406.
  Status DeclareExchange(const std::string& exchange) override;
  Status DeclareQueue(const std::string& queue) override;
  Status Bind(const std::string& queue, const std::string& exchange,
              const std::string& routing_key) override;
  // Whether `exchange` exists (a passive declare on a channel of its own).
  Status CheckExchange(const std::string& exchange) override;

  // Publisher: confirm mode on channel 1.
  Status EnableConfirms() override;
  // Publishes one persistent, mandatory message; its delivery tag is the count of messages
  // published on this link (Published() after the call).
  Status Publish(const std::string& exchange, const std::string& routing_key,
                 const AmqpMessage& m) override;
  uint64_t Published() const override;
  // Waits until the broker has confirmed (acked or nacked) every delivery tag up to `tag`,
  // reading the confirms of later tags as they come (or `timeout_ms` passed:
  // MQ_BROKER_UNAVAILABLE, the link is then broken).
  Status WaitConfirmed(uint64_t tag, int timeout_ms) override;
  // Whether the broker refused a message whose tag may be in [first, last]: a nack
  // (MQ_BROKER_REFUSED), or a returned, unroutable message (MQ_ERROR_QUEUE_NOT_FOUND; a
  // return names no tag, so it counts against every tag unconfirmed when it came).
  Status Refused(uint64_t first, uint64_t last) const override;
  // Lets rabbitmq-c read what arrived (heartbeats, a close) without blocking: an error if the
  // connection is gone.
  Status Poll() override;

  // Consumer: basic.qos(prefetch) and basic.consume with manual acknowledgements on channel 1.
  Status Consume(const std::string& queue, uint16_t prefetch) override;
  // The next delivery, waiting up to `timeout_ms` (0: only what has arrived): nullopt if none.
  Result<std::optional<Delivery>> Next(int timeout_ms) override;
  Status Ack(uint64_t tag, bool multiple) override;
  Status Nack(uint64_t tag, bool multiple, bool requeue) override;
  // Messages ready in `queue` (a passive declare on a channel of its own).
  Result<uint32_t> ReadyCount(const std::string& queue) override;

  const Endpoint& endpoint() const { return ep_; }

 private:
  struct State;
  explicit Link(Endpoint ep);
  Endpoint ep_;
  std::unique_ptr<State> st_;
};

// Connects Links to one endpoint, each within `timeout_ms` for the socket.
class LinkConnector : public Connector {
 public:
  LinkConnector(Endpoint ep, int timeout_ms) : ep_(std::move(ep)), timeout_ms_(timeout_ms) {}
  Result<std::unique_ptr<Channel>> Connect() override;

 private:
  Endpoint ep_;
  int timeout_ms_;
};

}  // namespace mq::bridge
