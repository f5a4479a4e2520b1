// status.hpp: the error model of libmq.
//
// No exception crosses the library's surface. Every fallible call returns a Status (or a
// Result<T>) that carries an MSMQ-style HRESULT, its symbol, a one-line text and, where it
// applies, the queue it concerns. ExitCode() is the one place that maps codes to the exit
// table of CLI.md.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace mq {

// HRESULT values from the Windows SDK's mq.h (see REFERENCE.md), plus a few of our own in
// the customer range (bit 29 set) where MSMQ has no equivalent.
enum class Code : uint32_t {
  kOk = 0,
  kInvalidArg = 0x80070057,  // E_INVALIDARG
  kBlank = 0x80040007,       // OLE_E_BLANK: mq-watch on a store that is missing
  kError = 0xC00E0001,       // MQ_ERROR
  kQueueNotFound = 0xC00E0003,
  kQueueNotActive = 0xC00E0004,  // status OFF
  kQueueExists = 0xC00E0005,
  kInvalidHandle = 0xC00E0007,        // mq-watch: the queue is closed (status OFF)
  kOperationCancelled = 0xC00E0008,   // a wait stopped by a signal
  kSharingViolation = 0xC00E0009,     // a cursor or lock held by another process
  kServiceNotAvailable = 0xC00E000B,  // the store is missing
  kIllegalQueuePathname = 0xC00E0014,
  kIllegalPropertyValue = 0xC00E0018,
  kIoTimeout = 0xC00E001B,
  kIllegalCursorAction = 0xC00E001C,
  kMessageAlreadyReceived = 0xC00E001D,
  kIllegalFormatname = 0xC00E001E,
  kUnsupportedFormatnameOperation = 0xC00E0020,
  kAccessDenied = 0xC00E0025,
  kInsufficientResources = 0xC00E0027,
  kMessageStorageFailed = 0xC00E002A,
  kTransactionUsage = 0xC00E0050,
  kQueueDeleted = 0xC00E005A,
  kLabelTooLong = 0xC00E005D,
  kMessageNotFound = 0xC00E0088,
  kBadXmlFormat = 0xC00E0092,
  kMessageLockedUnderTransaction = 0xC00E009C,  // held by an open transactional receive
  // mq's own codes (customer bit set, facility 0x0E).
  kCorrupted = 0xE00E0001,   // the store fails a consistency check
  kBrokenPipe = 0xE00E0002,  // stdout closed by the reader
  // 0xE00E0003 was an internal "map full", now lmdb::Txn::map_full().
  kExecFailed = 0xE00E0004,  // the --exec command failed
  kIo = 0xE00E0005,          // an I/O error from the system
  // Service Broker conversations (issue 5): 0xE00E0010 and up.
  kConversationNotFound = 0xE00E0010,  // no such conversation or group in the queue
  kConversationClosed = 0xE00E0011,    // a send on an ended conversation
  kValidationFailed = 0xE00E0012,      // a body its message type's validation refuses
  kMessageTypeNotFound = 0xE00E0013,
  kMessageTypeExists = 0xE00E0014,
  kConversationMessage = 0xE00E0015,  // a plain receive aimed at a conversation message
  // mq-admin bridge (issue 16): 0xE00E0020 and up.
  kBrokerUnavailable = 0xE00E0020,  // the AMQP broker cannot be reached, or the link broke
  kBrokerRefused = 0xE00E0021,      // the broker refused a message or a declaration
  // Links between stores (issue 14): 0xE00E0030 and up.
  kLinkFailed = 0xE00E0030,    // the link's command ended, or its stream broke
  kLinkProtocol = 0xE00E0031,  // the far side is not a (compatible) mq-admin accept
};

// The MSMQ symbol of a code, e.g. "MQ_ERROR_QUEUE_NOT_FOUND".
const char* CodeSymbol(Code code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Code code, std::string text, std::string subject = {})
      : code_(code), text_(std::move(text)), subject_(std::move(subject)) {}

  static Status Ok() { return {}; }
  // Named constructors, one per code: Status::QueueNotFound("no such queue", name). The
  // general constructor above is for a code computed at run time, and for rewording a status
  // that came from elsewhere.
#define MQ_NAMED_STATUS(name)                                          \
  static Status name(std::string text, std::string subject = {}) {     \
    return Status(Code::k##name, std::move(text), std::move(subject)); \
  }
  MQ_NAMED_STATUS(InvalidArg)
  MQ_NAMED_STATUS(Blank)
  MQ_NAMED_STATUS(Error)
  MQ_NAMED_STATUS(QueueNotFound)
  MQ_NAMED_STATUS(QueueNotActive)
  MQ_NAMED_STATUS(QueueExists)
  MQ_NAMED_STATUS(InvalidHandle)
  MQ_NAMED_STATUS(OperationCancelled)
  MQ_NAMED_STATUS(SharingViolation)
  MQ_NAMED_STATUS(ServiceNotAvailable)
  MQ_NAMED_STATUS(IllegalQueuePathname)
  MQ_NAMED_STATUS(IllegalPropertyValue)
  MQ_NAMED_STATUS(IoTimeout)
  MQ_NAMED_STATUS(IllegalCursorAction)
  MQ_NAMED_STATUS(MessageAlreadyReceived)
  MQ_NAMED_STATUS(IllegalFormatname)
  MQ_NAMED_STATUS(UnsupportedFormatnameOperation)
  MQ_NAMED_STATUS(AccessDenied)
  MQ_NAMED_STATUS(InsufficientResources)
  MQ_NAMED_STATUS(MessageStorageFailed)
  MQ_NAMED_STATUS(TransactionUsage)
  MQ_NAMED_STATUS(QueueDeleted)
  MQ_NAMED_STATUS(LabelTooLong)
  MQ_NAMED_STATUS(MessageNotFound)
  MQ_NAMED_STATUS(BadXmlFormat)
  MQ_NAMED_STATUS(MessageLockedUnderTransaction)
  MQ_NAMED_STATUS(Corrupted)
  MQ_NAMED_STATUS(BrokenPipe)
  MQ_NAMED_STATUS(ExecFailed)
  MQ_NAMED_STATUS(Io)
  MQ_NAMED_STATUS(ConversationNotFound)
  MQ_NAMED_STATUS(ConversationClosed)
  MQ_NAMED_STATUS(ValidationFailed)
  MQ_NAMED_STATUS(MessageTypeNotFound)
  MQ_NAMED_STATUS(MessageTypeExists)
  MQ_NAMED_STATUS(ConversationMessage)
  MQ_NAMED_STATUS(BrokerUnavailable)
  MQ_NAMED_STATUS(BrokerRefused)
  MQ_NAMED_STATUS(LinkFailed)
  MQ_NAMED_STATUS(LinkProtocol)
#undef MQ_NAMED_STATUS

  bool ok() const { return code_ == Code::kOk; }
  Code code() const { return code_; }
  const std::string& text() const { return text_; }
  // What the error is about: a queue name, a file; may be empty.
  const std::string& subject() const { return subject_; }
  Status& WithSubject(std::string s) {
    if (subject_.empty()) subject_ = std::move(s);
    return *this;
  }

  // "SUBJECT: text (MQ_SYMBOL 0xHEX)", without the tool name.
  std::string ToString() const;

 private:
  Code code_ = Code::kOk;
  std::string text_;
  std::string subject_;
};

// The exit status of CLI.md's table for a status.
int ExitCode(const Status& status);

// Builds a Status from errno of a failed system call on `what` (a file name), choosing
// MQ_ERROR_ACCESS_DENIED, MQ_ERROR_INSUFFICIENT_RESOURCES (ENOSPC, EDQUOT, ENOMEM) or an
// I/O error.
Status ErrnoStatus(int err, const std::string& what, const std::string& doing);

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}  // NOLINT: implicit by design
  Result(Status status) : v_(std::move(status)) {}  // NOLINT
  bool ok() const { return v_.index() == 0; }
  T& value() { return std::get<0>(v_); }
  const T& value() const { return std::get<0>(v_); }
  T& operator*() { return value(); }
  T* operator->() { return &value(); }
  Status status() const { return ok() ? Status() : std::get<1>(v_); }

 private:
  std::variant<T, Status> v_;
};

#define MQ_RETURN_IF_ERROR(expr)        \
  do {                                  \
    ::mq::Status mq_s_ = (expr);        \
    if (!mq_s_.ok()) return mq_s_;      \
  } while (0)

}  // namespace mq
