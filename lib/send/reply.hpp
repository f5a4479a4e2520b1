// reply.hpp: where a reply goes (mq-send --reply-to, --reply-to-env): the request's response
// queue, with the request's id as correlation id.
#pragma once

#include <string>

#include "base/status.hpp"
#include "store/store.hpp"

namespace mq {

struct ReplyTarget {
  std::string queue;
  std::string request_id;  // 20 bytes
};

// The request as mq-receive --exec (or mq-watch --exec) describes it to its command, in MQ_ID
// and MQ_RESPONSE_QUEUE. E_INVALIDARG if MQ_ID is unset or no message id, or the request
// names no response queue.
Result<ReplyTarget> ReplyFromEnv();

// The request `text` (a message id) as the store holds it: still in its queue, Locked by the
// receive that is answering it, or as a journal copy. MQ_ERROR_MESSAGE_NOT_FOUND, with a hint,
// if it is gone.
Result<ReplyTarget> ReplyFromStore(Store& store, const std::string& text);

}  // namespace mq
