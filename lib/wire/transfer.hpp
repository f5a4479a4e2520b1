// transfer.hpp: the wire protocol between mq-admin forward and mq-admin accept (mq(7)
// "Transfer between machines" describes it for users; this is the reference).
//
// A byte stream in each direction (the link command's stdin and stdout), carrying frames:
//
//   u32 BE   length L of what follows (5 .. kMaxFrame)
//   u8       type
//   L-5      payload
//   u32 BE   CRC-32 (IEEE) of type and payload: a stream damaged on its way is refused
//
// forward -> accept
//   'H' hello     "MQXFER" u16 BE version, then TLV: 1 source store GUID (16 bytes),
//                 2 stream id, 3 link name, 4 window size, 5 compression methods the sender
//                 offers (names separated by ','; "zstd"); absent: none; 6 the sender
//                 reports the errors accept sends it ('E') to its own user (1): accept then
//                 writes such an error to its stderr only when it cannot send it
//   'M' message   u64 TxSequenceNumber, u64 PreviousTxSequenceNumber (0: the first of this
//                 session, not checked), session header: u32 UserMsgSequenceNumber,
//                 u32 RecoverableMsgSeqNumber, u32 AckSequenceNumber, u32 WindowSize;
//                 then the message as one SRMP document ([MC-MQSRM] 2.2, srmp.hpp) whose
//                 <Stream> (streamId, current, previous) repeats the stream and numbers
//   'F' flush     nothing more follows until an acknowledgement: store what you have
//   'B' bye       the sender is done; accept answers what is pending and exits 0
//   'Z' compressed  only when the welcome chose "zstd": the next piece of one zstd stream
//                 (RFC 8878) that runs through the session, ending at a flush; decompressed,
//                 it is more frames of the kinds above (whole frames, each with its own CRC),
//                 read before the frame that follows the 'Z'
// accept -> forward
//   'W' welcome   "MQXFER" u16 BE version, then TLV: 1 accepting store GUID, 2 the stream's
//                 last accepted TxSequenceNumber, 3 the compression method chosen among those
//                 offered (absent: none)
//   'A' ack       session acknowledgement: u64 the stream's last accepted TxSequenceNumber
//                 (every message up to it is stored there, or refused), u32 AckSequenceNumber
//                 (messages of this session processed), u32 RecoverableMsgAckSeqNumber,
//                 u32 N, then N x (u64 TxSequenceNumber, u16 NACK class): the refusals among
//                 the messages this acknowledgement covers for the first time
// both
//   'E' error     UTF-8 text; the sender closes the stream after it
//
// Compression is an extension of version 1, negotiated: a peer that does not know it ignores
// the hello's field 5 (unknown TLV fields are skipped) and answers without field 3, and the
// sender then writes plain frames. The acknowledgements are never compressed.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "wire/crc32.hpp"
#include "base/ids.hpp"
#include "base/message.hpp"
#include "wire/srmp.hpp"
#include "base/status.hpp"

namespace mq::transfer {

// 2: text and json bodies travel in UTF-16LE, as SRMP has them (wire/srmp.hpp); a version 1
// peer would store them so.
inline constexpr uint16_t kVersion = 2;
inline constexpr std::string_view kMagic = "MQXFER";
inline constexpr uint32_t kMaxFrame = 1u << 30;

inline constexpr std::string_view kZstd = "zstd";

enum class Type : char {
  kHello = 'H', kMessage = 'M', kFlush = 'F', kBye = 'B', kWelcome = 'W', kAck = 'A',
  kError = 'E', kCompressed = 'Z',
};

struct Frame {
  Type type = Type::kError;
  std::string payload;
  // A message frame longer than the reader's limit: only its first kOversizeHead bytes are in
  // `payload` (its header, to refuse it by sequence number); the rest was read and dropped,
  // its checksum checked. 0 for a frame read whole.
  uint64_t oversize = 0;
};
inline constexpr size_t kOversizeHead = 64;

// Appends a frame to `out`.
void PutFrame(std::string& out, Type type, std::string_view payload);

// Splits a byte stream into frames.
class FrameReader {
 public:
  void Feed(std::string_view bytes) { buf_.append(bytes); }
  // The next whole frame, nullopt if more bytes are needed, or an error for a stream that is
  // not frames (bad length, unknown type).
  Result<std::optional<Frame>> Next();
  bool Empty() const { return pos_ == buf_.size() && !skip_left_; }
  size_t Pending() const { return buf_.size() - pos_; }
  // The longest frame held in memory (default kMaxFrame): a longer message frame is passed
  // over as it comes (Frame::oversize), any other longer frame is an error. So the buffer
  // never holds much more than `limit`, whatever a peer declares.
  void SetLimit(uint32_t limit) { limit_ = limit; }
  uint32_t limit() const { return limit_; }

 private:
  std::string buf_;
  size_t pos_ = 0;
  uint32_t limit_ = kMaxFrame;
  // Passing over an oversize message frame: what is left of it (its checksum included), the
  // checksum so far, and the frame as it will be returned.
  uint64_t skip_left_ = 0;
  uint32_t skip_crc_ = 0;
  Frame skip_;
};

// The sender's side of 'Z' frames: one zstd stream for the session.
class Compressor {
 public:
  Compressor();
  ~Compressor();
  Compressor(const Compressor&) = delete;
  Compressor& operator=(const Compressor&) = delete;
  // Appends to `out` one 'Z' frame holding `frames` (whole frames, PutFrame's output).
  void PutCompressed(std::string& out, std::string_view frames);

 private:
  struct State;
  std::unique_ptr<State> z_;
  std::string buf_;
};

// The receiver's side: decompresses the payload of each 'Z' frame and hands back the frames in
// it.
class Decompressor {
 public:
  Decompressor();
  ~Decompressor();
  Decompressor(const Decompressor&) = delete;
  Decompressor& operator=(const Decompressor&) = delete;
  // Decompresses one 'Z' payload into the frames it holds; an error for a damaged stream, or
  // for one that would hold more than `limit` (SetLimit) plus 1 MiB at once: the output is
  // taken 64 KiB at a time and split into frames as it comes (an oversize message frame is
  // passed over, FrameReader), so a small payload that would inflate to gigabytes (a "zip
  // bomb") is refused after about that much.
  Status Feed(std::string_view payload);
  // The next decompressed frame, nullopt when those of the last payloads are all taken.
  Result<std::optional<Frame>> Next();
  // Whether a frame was cut between payloads (the sender never does that).
  bool Partial() const { return !frames_.Empty(); }
  void SetLimit(uint32_t limit) { frames_.SetLimit(limit); }

 private:
  struct State;
  std::unique_ptr<State> z_;
  FrameReader frames_;
  std::deque<Frame> ready_;
  size_t ready_bytes_ = 0;
};

// Whether forward should compress what it writes now. Compressing pays when the link is what
// limits the transfer (a network, a throttled pipe: the same bytes carry about three times the
// messages), not when the far side's storing is (a local pipe: then it only costs CPU). Once
// the link backs up (a write would block: every buffer on the way is full), each mode is
// tried for kProbeMs, by the messages per second the link takes, and the better kept for
// kHoldMs; plain unless compressed is clearly faster. Then the same again once the link backs
// up.
class CompressionTuner {
 public:
  static constexpr int64_t kProbeMs = 300;
  static constexpr int64_t kHoldMs = 30000;

  // `negotiated`: the far side decompresses; `always`: no probing, compressed throughout.
  void Start(bool negotiated, bool always, int64_t now);
  // The link took more messages (their frames written whole): `plain` framed plain,
  // `compressed` compressed. A probe counts those of its own mode, from the first of them on
  // (what was framed before it, still waiting to be written, says nothing of it).
  void Taken(uint64_t plain, uint64_t compressed, int64_t now);
  // The queue had nothing more: a probe measures nothing, plain until the link backs up again.
  void RanDry(int64_t now);
  // A write to the link would block.
  void Backlogged(int64_t now);
  // Whether to compress the next frames.
  bool Compress(int64_t now);

 private:
  enum Phase { kWait, kProbePlain, kProbeCompressed, kHold };
  void Begin(Phase p, int64_t now);
  bool negotiated_ = false;
  bool always_ = false;
  Phase phase_ = kWait;
  bool started_ = false;  // a probe: the link took its first message
  int64_t since_ = 0;
  uint64_t taken_ = 0;
  double plain_rate_ = 0;
  bool compress_ = false;
};

struct Hello {
  uint16_t version = kVersion;
  Guid source{};
  std::string stream;
  std::string link;
  uint32_t window = 0;
  std::string compression;  // offered: "zstd", or empty
  bool reports_errors = false;  // field 6
};
std::string EncodeHello(const Hello& h);
Status DecodeHello(std::string_view payload, Hello& h);

struct Welcome {
  uint16_t version = kVersion;
  Guid store{};
  uint64_t last = 0;
  std::string compression;  // chosen: "zstd", or empty (plain frames)
};
// The method an accept chooses from a hello's offer: zstd if offered, else none.
std::string ChooseCompression(std::string_view offered);
std::string EncodeWelcome(const Welcome& w);
Status DecodeWelcome(std::string_view payload, Welcome& w);

// The session header of seed 004 (MS-MQQB 3.1.7.1.3) and the transaction header fields.
struct MessageHeader {
  uint64_t seq = 0;
  uint64_t prev = 0;
  uint32_t user_msg_seq = 0;
  uint32_t recoverable_seq = 0;
  uint32_t ack_seq = 0;
  uint32_t window = 0;
};
inline constexpr size_t kMessageHeaderSize = 8 + 8 + 4 * 4;
void AppendMessageHeader(std::string& out, const MessageHeader& h);
Status DecodeMessage(std::string_view payload, MessageHeader& h, Message& m);
// The header alone (of a message frame too large to be read whole, Frame::oversize).
Status DecodeMessageHeader(std::string_view payload, MessageHeader& h);

struct Ack {
  uint64_t last = 0;
  uint32_t ack_seq = 0;
  uint32_t recoverable_ack_seq = 0;
  std::vector<std::pair<uint64_t, uint16_t>> nacks;
};
std::string EncodeAck(const Ack& a);
Status DecodeAck(std::string_view payload, Ack& a);

// One message as it travels, an 'M' frame's payload appended to `out`: the message header `h`,
// then an SRMP document (srmp.hpp) whose <Stream> is the link's stream (streamId `stream`,
// current h.seq, previous h.prev); a document that disagrees with its header is refused. What
// the far store sets anew for each message it stores (arrival and enqueue times, queuing
// order, status, receive history: EncodeSrmp's local_state) is left out.
void AppendMessage(std::string& out, const MessageHeader& h, const Message& m,
                   const std::string& stream);
Status DecodeTransferDoc(std::string_view doc, Message& m, SrmpStream* stream);

}  // namespace mq::transfer
