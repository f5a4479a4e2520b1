// outgoing.cpp: a forward's frames on their way to the link (outgoing.hpp).
#include "link/outgoing.hpp"

#include <unistd.h>

#include <cerrno>

namespace mq::link {

using transfer::Type;

void Outgoing::Reset() {
  buf_.clear();
  pos_ = 0;
  base_ = 0;
  plain_.clear();
  compressor_.reset();
  compressing_ = false;
  unmarked_ = 0;
  marks_.clear();
  written_[0] = written_[1] = 0;
  framed_ = 0;
}

void Outgoing::SetCompress(bool on) {
  if (on == compressing_) return;
  if (on && !compressor_) compressor_ = std::make_unique<transfer::Compressor>();
  Seal();
  Mark();  // what was framed so far was framed in the other mode
  compressing_ = on;
}

void Outgoing::Put(Type type, std::string_view payload) {
  transfer::PutFrame(compressing_ ? plain_ : buf_, type, payload);
  if (type == Type::kMessage) ++unmarked_;
  framed_ += payload.size() + 9;
  if (plain_.size() >= kSealBytes) Seal();
}

Status Outgoing::Flush(int fd) {
  Seal();
  Mark();
  blocked_ = false;
  while (pos_ < buf_.size()) {
    ssize_t n = ::write(fd, buf_.data() + pos_, buf_.size() - pos_);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      blocked_ = true;
      break;
    }
    if (n < 0) return ErrnoStatus(errno, "link", "write failed");
    pos_ += static_cast<size_t>(n);
  }
  while (!marks_.empty() && marks_.front().end <= base_ + pos_) {
    written_[marks_.front().compressed] += marks_.front().messages;
    marks_.pop_front();
  }
  if (pos_ == buf_.size()) {
    base_ += pos_;
    buf_.clear();
    pos_ = 0;
  } else if (pos_ >= (1u << 20) && pos_ * 2 >= buf_.size()) {
    base_ += pos_;
    buf_.erase(0, pos_);
    pos_ = 0;
  }
  return {};
}

void Outgoing::Mark() {
  if (!unmarked_) return;
  marks_.push_back(Marker{base_ + buf_.size(), unmarked_, compressing_});
  unmarked_ = 0;
}

void Outgoing::Seal() {
  if (plain_.empty()) return;
  compressor_->PutCompressed(buf_, plain_);
  plain_.clear();
}

}  // namespace mq::link
