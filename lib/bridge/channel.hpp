// channel.hpp: what the bridge engines (bridge.hpp) need of an AMQP broker, as an interface:
// one channel of one connection, publishing in confirm mode or consuming with manual
// acknowledgements, and the Connector that opens one. amqp_link.hpp's Link and LinkConnector
// implement it with rabbitmq-c; the unit tests with a broker in memory. The engines see only
// this file, never rabbitmq-c.
//
// Contract, for every implementation:
//   - Errors carry the codes of amqp_link.hpp's table: a lost or unusable connection is
//     MQ_BROKER_UNAVAILABLE (Transient: the engine drops the channel and connects again);
//     a nack or a refused declaration MQ_BROKER_REFUSED; a missing exchange or queue, or a
//     returned (unroutable) message MQ_ERROR_QUEUE_NOT_FOUND; a refused login
//     MQ_ERROR_ACCESS_DENIED. The subject names the broker (or the exchange, the queue).
//   - After an error the channel may be broken for good: the engine destroys it.
//   - Destroying a channel closes it and its connection. Deliveries not acknowledged by then
//     go back to the broker's queue (it delivers them again, redelivered set); messages
//     published and not yet confirmed may or may not have been taken.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "base/status.hpp"
#include "bridge/amqp_map.hpp"

namespace mq::bridge {

// Whether a reconnection may cure the error (a lost connection, a broker restarting).
inline bool Transient(const Status& s) { return s.code() == Code::kBrokerUnavailable; }

struct Delivery {
  uint64_t tag = 0;
  bool redelivered = false;
  AmqpMessage message;
};

class Channel {
 public:
  virtual ~Channel() = default;

  // --declare: a durable exchange of type direct (unless `exchange` is empty: the default
  // exchange), a durable quorum queue, and its binding with `routing_key`.
  virtual Status DeclareExchange(const std::string& exchange) = 0;
  virtual Status DeclareQueue(const std::string& queue) = 0;
  virtual Status Bind(const std::string& queue, const std::string& exchange,
                      const std::string& routing_key) = 0;
  // Whether `exchange` exists.
  virtual Status CheckExchange(const std::string& exchange) = 0;

  // Publisher: confirm mode. Each publish is persistent and mandatory; its delivery tag is
  // the count of messages published on this channel (Published() after the call).
  virtual Status EnableConfirms() = 0;
  virtual Status Publish(const std::string& exchange, const std::string& routing_key,
                         const AmqpMessage& m) = 0;
  virtual uint64_t Published() const = 0;
  // Waits until the broker has confirmed (acked or nacked) every tag up to `tag`, or
  // `timeout_ms` passed (MQ_BROKER_UNAVAILABLE).
  virtual Status WaitConfirmed(uint64_t tag, int timeout_ms) = 0;
  // Whether the broker refused (nacked, or returned as unroutable) a message whose tag may be
  // in [first, last]; ok if it took them all.
  virtual Status Refused(uint64_t first, uint64_t last) const = 0;
  // Reads what arrived (heartbeats, a close) without blocking: an error if the connection is
  // gone.
  virtual Status Poll() = 0;

  // Consumer: basic.qos(prefetch) and basic.consume with manual acknowledgements.
  virtual Status Consume(const std::string& queue, uint16_t prefetch) = 0;
  // The next delivery, waiting up to `timeout_ms` (0: only what has arrived): nullopt if none.
  virtual Result<std::optional<Delivery>> Next(int timeout_ms) = 0;
  virtual Status Ack(uint64_t tag, bool multiple) = 0;
  virtual Status Nack(uint64_t tag, bool multiple, bool requeue) = 0;
  // Messages ready in `queue` (not counting those delivered and unacknowledged).
  virtual Result<uint32_t> ReadyCount(const std::string& queue) = 0;
};

// Opens channels to one broker: each Connect() is a new connection (a reconnection after a
// transient error is another call).
class Connector {
 public:
  virtual ~Connector() = default;
  virtual Result<std::unique_ptr<Channel>> Connect() = 0;
};

}  // namespace mq::bridge
