// queue.hpp: a queue's catalog record (the value in the `queues` database).
//
// Version byte 1, then TLV fields (codec.hpp) as for messages: absent fields take defaults.
// A subqueue ("orders;poison") or journal ("orders;journal") is a catalog entry of its own,
// made when first written; the system queues are made with the store.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "message.hpp"
#include "status.hpp"

namespace mq {

struct QueueInfo {
  std::string name;  // the key, e.g. "orders" or "orders;poison"
  uint32_t id = 0;
  std::string label;
  uint64_t quota = 0;  // bytes of records; 0: no limit
  uint64_t max_message_size = kDefaultMaxMessageSize;
  bool enabled = true;  // Service Broker STATUS
  int64_t created_time = 0;
  int64_t modified_time = 0;
  // Counters, kept in every transaction that changes the queue.
  uint64_t count = 0;
  uint64_t bytes = 0;
  uint64_t next_lookup = 1;
  uint64_t delayed = 0;  // of `count`: stored but not visible yet (delayed delivery)

  bool operator==(const QueueInfo&) const = default;
};

std::string EncodeQueue(const QueueInfo& q);
// Decodes a record; `name` is left as it is in `q`.
Status DecodeQueue(std::string_view record, QueueInfo& q);

}  // namespace mq
