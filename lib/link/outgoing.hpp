// outgoing.hpp: what a forward has to write to the link, in order (link/forward.hpp): frames,
// compressed into 'Z' frames (wire/transfer.hpp) once the far side chose compression.
// Owns the bytes not yet written and the session's one zstd stream.
//
// Rules:
//  - Written from an offset, so that a partial write of a non-blocking descriptor moves no
//    bytes; Flush() writes what the descriptor takes now and says (blocked()) if it took less.
//  - One zstd stream runs through the session, whatever is written plain between its pieces;
//    frames are compressed in pieces of about 256 KiB, sealed at each Flush().
//  - It counts, for the compression tuner, the messages whose frames the link has taken whole,
//    by the mode they were framed in.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "base/status.hpp"
#include "wire/transfer.hpp"

namespace mq::link {

class Outgoing {
 public:
  // Empties it for a new session.
  void Reset();
  // Whether the next frames are compressed (only once the welcome chose zstd).
  void SetCompress(bool on);
  bool compressing() const { return compressing_; }
  void Put(transfer::Type type, std::string_view payload);
  // Bytes framed in this session (before compression).
  uint64_t framed() const { return framed_; }
  // Messages whose frames the link has taken whole since the last call: framed plain, and
  // framed compressed.
  std::pair<uint64_t, uint64_t> TakeWritten() {
    return {std::exchange(written_[0], 0), std::exchange(written_[1], 0)};
  }
  bool Empty() const { return pos_ == buf_.size() && plain_.empty(); }
  size_t Size() const { return buf_.size() - pos_ + plain_.size(); }

  // Writes what the (non-blocking) descriptor takes now.
  Status Flush(int fd);
  // Whether the last Flush left bytes the link would not take.
  bool blocked() const { return blocked_; }

 private:
  // Frames are compressed in pieces of about this much.
  static constexpr size_t kSealBytes = 256 << 10;
  // Everything framed so far (sealed) ends where the buffer ends now.
  void Mark();
  void Seal();
  std::string buf_;
  size_t pos_ = 0;
  std::string plain_;
  std::unique_ptr<transfer::Compressor> compressor_;
  bool compressing_ = false;
  bool blocked_ = false;
  uint64_t base_ = 0;      // the offset in the session's stream of buf_[0]
  uint64_t unmarked_ = 0;  // messages framed since the last mark
  // Where in the stream the frames of so many messages end: popped as the link takes them.
  struct Marker {
    uint64_t end;
    uint64_t messages;
    bool compressed;
  };
  std::deque<Marker> marks_;
  uint64_t written_[2] = {0, 0};  // plain, compressed
  uint64_t framed_ = 0;
};

}  // namespace mq::link
