// status.cpp: MSMQ symbols and the one mapping from codes to exit statuses.
#include "base/status.hpp"

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

namespace mq {

const char* CodeSymbol(Code code) {
  switch (code) {
    case Code::kOk: return "MQ_OK";
    case Code::kInvalidArg: return "E_INVALIDARG";
    case Code::kBlank: return "OLE_E_BLANK";
    case Code::kError: return "MQ_ERROR";
    case Code::kQueueNotFound: return "MQ_ERROR_QUEUE_NOT_FOUND";
    case Code::kQueueNotActive: return "MQ_ERROR_QUEUE_NOT_ACTIVE";
    case Code::kQueueExists: return "MQ_ERROR_QUEUE_EXISTS";
    case Code::kInvalidHandle: return "MQ_ERROR_INVALID_HANDLE";
    case Code::kSharingViolation: return "MQ_ERROR_SHARING_VIOLATION";
    case Code::kOperationCancelled: return "MQ_ERROR_OPERATION_CANCELLED";
    case Code::kServiceNotAvailable: return "MQ_ERROR_SERVICE_NOT_AVAILABLE";
    case Code::kIllegalQueuePathname: return "MQ_ERROR_ILLEGAL_QUEUE_PATHNAME";
    case Code::kIllegalPropertyValue: return "MQ_ERROR_ILLEGAL_PROPERTY_VALUE";
    case Code::kIoTimeout: return "MQ_ERROR_IO_TIMEOUT";
    case Code::kIllegalCursorAction: return "MQ_ERROR_ILLEGAL_CURSOR_ACTION";
    case Code::kMessageAlreadyReceived: return "MQ_ERROR_MESSAGE_ALREADY_RECEIVED";
    case Code::kIllegalFormatname: return "MQ_ERROR_ILLEGAL_FORMATNAME";
    case Code::kUnsupportedFormatnameOperation:
      return "MQ_ERROR_UNSUPPORTED_FORMATNAME_OPERATION";
    case Code::kAccessDenied: return "MQ_ERROR_ACCESS_DENIED";
    case Code::kInsufficientResources: return "MQ_ERROR_INSUFFICIENT_RESOURCES";
    case Code::kMessageStorageFailed: return "MQ_ERROR_MESSAGE_STORAGE_FAILED";
    case Code::kTransactionUsage: return "MQ_ERROR_TRANSACTION_USAGE";
    case Code::kQueueDeleted: return "MQ_ERROR_QUEUE_DELETED";
    case Code::kLabelTooLong: return "MQ_ERROR_LABEL_TOO_LONG";
    case Code::kMessageNotFound: return "MQ_ERROR_MESSAGE_NOT_FOUND";
    case Code::kBadXmlFormat: return "MQ_ERROR_BAD_XML_FORMAT";
    case Code::kMessageLockedUnderTransaction:
      return "MQ_ERROR_MESSAGE_LOCKED_UNDER_TRANSACTION";
    case Code::kCorrupted: return "MQ_CORRUPTED_STORE";
    case Code::kBrokenPipe: return "MQ_BROKEN_PIPE";
    case Code::kExecFailed: return "MQ_EXEC_FAILED";
    case Code::kIo: return "MQ_IO_ERROR";
    case Code::kConversationNotFound: return "MQ_CONVERSATION_NOT_FOUND";
    case Code::kConversationClosed: return "MQ_CONVERSATION_CLOSED";
    case Code::kValidationFailed: return "MQ_VALIDATION_FAILED";
    case Code::kMessageTypeNotFound: return "MQ_MESSAGE_TYPE_NOT_FOUND";
    case Code::kMessageTypeExists: return "MQ_MESSAGE_TYPE_EXISTS";
    case Code::kConversationMessage: return "MQ_CONVERSATION_MESSAGE";
    case Code::kBrokerUnavailable: return "MQ_BROKER_UNAVAILABLE";
    case Code::kBrokerRefused: return "MQ_BROKER_REFUSED";
    case Code::kLinkFailed: return "MQ_LINK_FAILED";
    case Code::kLinkProtocol: return "MQ_LINK_PROTOCOL";
  }
  return "MQ_ERROR";
}

std::string Status::ToString() const {
  std::string out;
  if (!subject_.empty()) out = subject_ + ": ";
  out += fmt::format("{} ({} 0x{:08X})", text_, CodeSymbol(code_),
                     static_cast<uint32_t>(code_));
  return out;
}

int ExitCode(const Status& status) {
  switch (status.code()) {
    case Code::kOk:
      return 0;
    case Code::kMessageNotFound:
    case Code::kIoTimeout:
    case Code::kMessageAlreadyReceived:
      return 1;
    case Code::kInvalidArg:
    case Code::kIllegalQueuePathname:
    case Code::kIllegalPropertyValue:
    case Code::kIllegalFormatname:
    case Code::kUnsupportedFormatnameOperation:
    case Code::kLabelTooLong:
      return 2;
    case Code::kBlank:
    case Code::kQueueNotFound:
    case Code::kServiceNotAvailable:
    case Code::kConversationNotFound:
    case Code::kMessageTypeNotFound:
      return 3;
    case Code::kAccessDenied:
      return 4;
    case Code::kQueueNotActive:
    case Code::kInvalidHandle:
    case Code::kSharingViolation:
    case Code::kQueueDeleted:
    case Code::kQueueExists:
    case Code::kTransactionUsage:
    case Code::kMessageLockedUnderTransaction:
    case Code::kConversationClosed:
    case Code::kMessageTypeExists:
    case Code::kBrokerRefused:
      return 5;
    case Code::kInsufficientResources: return 6;
    case Code::kIllegalCursorAction:
    case Code::kBadXmlFormat:
    case Code::kValidationFailed:
    case Code::kConversationMessage:
      return 7;
    case Code::kExecFailed:
      return 8;
    case Code::kError:
    case Code::kOperationCancelled:
    case Code::kMessageStorageFailed:
    case Code::kCorrupted:
    case Code::kBrokenPipe:
    case Code::kIo:
    case Code::kBrokerUnavailable:
    case Code::kLinkFailed:
    case Code::kLinkProtocol:
      return 10;
  }
  return 10;
}

Status ErrnoStatus(int err, const std::string& what, const std::string& doing) {
  std::string text = doing.empty() ? std::strerror(err)
                                   : fmt::format("{}: {}", doing, std::strerror(err));
  switch (err) {
    case EACCES:
    case EPERM:
    case EROFS: return Status::AccessDenied(text, what);
    case ENOSPC:
    case EDQUOT:
    case ENOMEM:
    case EFBIG: return Status::InsufficientResources(text, what);
    case EPIPE: return Status::BrokenPipe(text, what);
    default: return Status::Io(text, what);
  }
}

}  // namespace mq
