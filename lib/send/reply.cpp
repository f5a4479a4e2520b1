// reply.cpp: the target of a reply (reply.hpp).
#include "send/reply.hpp"

#include <cstdlib>

#include "base/ids.hpp"

namespace mq {

Result<ReplyTarget> ReplyFromEnv() {
  const char* id_text = std::getenv("MQ_ID");
  if (!id_text || !*id_text)
    return Status::InvalidArg(
        "--reply-to-env: MQ_ID is not set (use it in a command run by mq-receive "
        "--exec or mq-watch --exec)");
  auto id = ParseMessageId(id_text);
  if (!id) return Status::InvalidArg("--reply-to-env: MQ_ID is not a message id", id_text);
  const char* queue = std::getenv("MQ_RESPONSE_QUEUE");
  if (!queue || !*queue)
    return Status::InvalidArg(
        "the request names no response queue (MQ_RESPONSE_QUEUE is empty): there is "
        "nowhere to reply",
        id_text);
  return ReplyTarget{queue, *id};
}

Result<ReplyTarget> ReplyFromStore(Store& store, const std::string& text) {
  auto id = ParseMessageId(text);
  if (!id) return Status::InvalidArg("--reply-to: not a message id", text);
  auto m = store.FindMessage(*id);
  if (!m.ok()) {
    if (m.status().code() == Code::kMessageNotFound)
      return Status::MessageNotFound(
          "--reply-to: the request is no longer in the store (inside --exec use "
          "--reply-to-env)",
          text);
    return m.status();
  }
  if (m->response_queue.empty())
    return Status::InvalidArg("the request names no response queue: there is nowhere to reply",
                              text);
  return ReplyTarget{m->response_queue, *id};
}

}  // namespace mq
