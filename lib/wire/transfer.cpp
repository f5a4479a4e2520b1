// transfer.cpp: frames of the forward/accept protocol (transfer.hpp).
#include "wire/transfer.hpp"

#include <zstd.h>

#include <algorithm>
#include <new>

#include <fmt/format.h>

#include "base/codec.hpp"
#include "wire/srmp.hpp"

namespace mq::transfer {

namespace {

Status Malformed(std::string_view what) {
  return Status::Io(fmt::format("malformed {} frame: the stream is corrupted", what));
}

bool KnownType(char t) {
  switch (static_cast<Type>(t)) {
    case Type::kHello: case Type::kMessage: case Type::kFlush: case Type::kBye:
    case Type::kWelcome: case Type::kAck: case Type::kError: case Type::kCompressed:
      return true;
  }
  return false;
}

// "MQXFER" u16 version; the rest is left in `rest`.
Status TakeMagic(std::string_view payload, uint16_t& version, std::string_view& rest,
                 std::string_view what) {
  if (payload.size() < kMagic.size() + 2 || payload.substr(0, kMagic.size()) != kMagic)
    return Status::Io(fmt::format("the peer did not answer with an mq transfer {} (is "
                                  "the link's command running mq-admin accept?)",
                                  what));
  version = static_cast<uint16_t>((static_cast<uint8_t>(payload[kMagic.size()]) << 8) |
                                  static_cast<uint8_t>(payload[kMagic.size() + 1]));
  rest = payload.substr(kMagic.size() + 2);
  return {};
}

void PutMagic(std::string& out, uint16_t version) {
  out += kMagic;
  out.push_back(static_cast<char>(version >> 8));
  out.push_back(static_cast<char>(version & 0xFF));
}

}  // namespace

void PutFrame(std::string& out, Type type, std::string_view payload) {
  PutU32BE(out, static_cast<uint32_t>(payload.size() + 5));
  size_t start = out.size();
  out.push_back(static_cast<char>(type));
  out += payload;
  PutU32BE(out, Crc32(std::string_view(out).substr(start)));
}

Result<std::optional<Frame>> FrameReader::Next() {
  if (skip_left_) {
    // The rest of an oversize message frame: checksummed and dropped as it comes.
    uint64_t body_left = skip_left_ > 4 ? skip_left_ - 4 : 0;  // the checksum comes last
    size_t n = static_cast<size_t>(std::min<uint64_t>(buf_.size() - pos_, body_left));
    skip_crc_ = Crc32(std::string_view(buf_).substr(pos_, n), skip_crc_);
    pos_ += n;
    skip_left_ -= n;
    if (skip_left_ == 4 && buf_.size() - pos_ >= 4) {
      if (skip_crc_ != GetU32BE(buf_, pos_))
        return Status::Io("a frame fails its checksum: the stream is corrupted");
      pos_ += 4;
      skip_left_ = 0;
    }
    if (pos_ == buf_.size()) {
      buf_.clear();
      pos_ = 0;
    }
    if (skip_left_) return std::optional<Frame>();
    return std::optional<Frame>(std::move(skip_));
  }
  if (buf_.size() - pos_ < 5) {
    if (pos_ && pos_ == buf_.size()) {
      buf_.clear();
      pos_ = 0;
    }
    return std::optional<Frame>();
  }
  uint32_t len = GetU32BE(buf_, pos_);
  if (len < 5 || len > kMaxFrame)
    return Status::Io(fmt::format("bad frame length {}: the stream is corrupted", len));
  char t = buf_[pos_ + 4];
  if (!KnownType(t))
    return Status::Io(fmt::format("unknown frame type 0x{:02x}: the stream is corrupted",
                                  static_cast<uint8_t>(t)));
  // (A frame too short to have a head and a checksum after it is read whole: only a tiny
  // limit would make one oversize.)
  if (len > limit_ && len > 5 + kOversizeHead + 4) {
    if (static_cast<Type>(t) != Type::kMessage)
      return Status::Io(fmt::format("a frame of {} bytes, more than the {} this side takes: "
                                    "the stream is corrupted",
                                    len, limit_));
    // Its type byte and head first, then the rest as it comes (above).
    if (buf_.size() - pos_ < 5 + kOversizeHead) return std::optional<Frame>();
    skip_ = Frame{};
    skip_.type = Type::kMessage;
    skip_.payload = buf_.substr(pos_ + 5, kOversizeHead);
    skip_.oversize = len - 5;
    skip_crc_ = Crc32(std::string_view(buf_).substr(pos_ + 4, 1 + kOversizeHead));
    skip_left_ = len - 1 - kOversizeHead;  // what follows the head, the checksum included
    pos_ += 5 + kOversizeHead;
    return Next();
  }
  if (buf_.size() - pos_ - 4 < len) return std::optional<Frame>();
  std::string_view body = std::string_view(buf_).substr(pos_ + 4, len - 4);
  if (Crc32(body) != GetU32BE(buf_, pos_ + len))
    return Status::Io("a frame fails its checksum: the stream is corrupted");
  Frame f;
  f.type = static_cast<Type>(t);
  f.payload = std::string(body.substr(1));
  pos_ += 4 + len;
  // Drop what was read once it is most of the buffer, so that it stays small.
  if (pos_ > (1u << 20) && pos_ * 2 > buf_.size()) {
    buf_.erase(0, pos_);
    pos_ = 0;
  }
  return std::optional<Frame>(std::move(f));
}

// ---- 'Z' frames ------------------------------------------------------------------------------

// zstd at level 1: the point is the XML of the envelopes, which it shrinks about tenfold, at a
// cost that keeps up with a local pipe (several times zlib's fastest level, for smaller output).
// The window is bounded on both sides, so that a peer cannot make accept allocate much.
constexpr int kZstdLevel = 1;
constexpr int kZstdWindowLog = 20;  // 1 MiB

struct Compressor::State {
  ZSTD_CCtx* c = nullptr;
};

Compressor::Compressor() : z_(std::make_unique<State>()) {
  z_->c = ZSTD_createCCtx();
  if (!z_->c || ZSTD_isError(ZSTD_CCtx_setParameter(z_->c, ZSTD_c_compressionLevel, kZstdLevel)) ||
      ZSTD_isError(ZSTD_CCtx_setParameter(z_->c, ZSTD_c_windowLog, kZstdWindowLog))) {
    ZSTD_freeCCtx(z_->c);
    throw std::bad_alloc();
  }
}

Compressor::~Compressor() { ZSTD_freeCCtx(z_->c); }

void Compressor::PutCompressed(std::string& out, std::string_view frames) {
  // The frame is written in place: length and CRC once the compressed size is known.
  size_t start = out.size();
  out.append(4, '\0');
  out.push_back(static_cast<char>(Type::kCompressed));
  ZSTD_inBuffer in{frames.data(), frames.size(), 0};
  for (;;) {
    size_t used = out.size();
    size_t room = ZSTD_compressBound(in.size - in.pos) + 64;
    out.resize(used + room);
    ZSTD_outBuffer o{out.data() + used, room, 0};
    size_t left = ZSTD_compressStream2(z_->c, &o, &in, ZSTD_e_flush);
    if (ZSTD_isError(left)) throw std::bad_alloc();  // only a broken state
    out.resize(used + o.pos);
    if (left == 0 && in.pos == in.size) break;  // all in, and flushed
  }
  std::string_view body = std::string_view(out).substr(start + 4);
  uint32_t crc = Crc32(body);
  uint32_t len = static_cast<uint32_t>(body.size() + 4);
  for (int i = 0; i < 4; ++i) out[start + i] = static_cast<char>(len >> (24 - 8 * i));
  PutU32BE(out, crc);
}

struct Decompressor::State {
  ZSTD_DCtx* d = nullptr;
};

Decompressor::Decompressor() : z_(std::make_unique<State>()) {
  z_->d = ZSTD_createDCtx();
  if (!z_->d || ZSTD_isError(ZSTD_DCtx_setParameter(z_->d, ZSTD_d_windowLogMax, kZstdWindowLog))) {
    ZSTD_freeDCtx(z_->d);
    throw std::bad_alloc();
  }
}

Decompressor::~Decompressor() { ZSTD_freeDCtx(z_->d); }

Status Decompressor::Feed(std::string_view payload) {
  ZSTD_inBuffer in{payload.data(), payload.size(), 0};
  char buf[1 << 16];
  for (;;) {
    ZSTD_outBuffer o{buf, sizeof buf, 0};
    size_t rc = ZSTD_decompressStream(z_->d, &o, &in);
    if (ZSTD_isError(rc))
      return Status::Io(fmt::format("a compressed frame cannot be decompressed ({}): the "
                                    "stream is corrupted",
                                    ZSTD_getErrorName(rc)));
    frames_.Feed(std::string_view(buf, o.pos));
    for (;;) {
      auto f = frames_.Next();
      if (!f.ok()) return f.status();
      if (!*f) break;
      ready_bytes_ += sizeof(Frame) + (*f)->payload.size();  // what it holds in memory
      ready_.push_back(std::move(**f));
    }
    // What one frame may hold, plus the frames around it (a sender seals its frames every
    // 256 KiB): anything more held at once is no sender's.
    if (ready_bytes_ + frames_.Pending() > size_t{frames_.limit()} + (1u << 20))
      return Status::Io("a compressed frame decompresses beyond any frame's size: the "
                        "stream is corrupted");
    // Done when the input is used up and the output had room (nothing more is held back).
    if (in.pos == in.size && o.pos < o.size) return {};
  }
}

Result<std::optional<Frame>> Decompressor::Next() {
  if (ready_.empty()) return std::optional<Frame>();
  Frame f = std::move(ready_.front());
  ready_.pop_front();
  ready_bytes_ -= sizeof(Frame) + f.payload.size();
  return std::optional<Frame>(std::move(f));
}

std::string ChooseCompression(std::string_view offered) {
  while (!offered.empty()) {
    size_t comma = offered.find(',');
    std::string_view one = offered.substr(0, comma);
    if (one == kZstd) return std::string(kZstd);
    if (comma == std::string_view::npos) break;
    offered.remove_prefix(comma + 1);
  }
  return {};
}

void CompressionTuner::Start(bool negotiated, bool always, int64_t now) {
  negotiated_ = negotiated;
  always_ = always;
  compress_ = false;
  Begin(kWait, now);
}

void CompressionTuner::Begin(Phase p, int64_t now) {
  phase_ = p;
  since_ = now;
  started_ = false;
  taken_ = 0;
}

void CompressionTuner::Taken(uint64_t plain, uint64_t compressed, int64_t now) {
  uint64_t n = phase_ == kProbePlain ? plain : phase_ == kProbeCompressed ? compressed : 0;
  if (!n) return;
  if (!started_) {
    // The clock starts with the first message of the probe's mode the link took.
    started_ = true;
    since_ = now;
    return;
  }
  taken_ += n;
}

void CompressionTuner::RanDry(int64_t now) {
  if (phase_ == kProbePlain || phase_ == kProbeCompressed) {
    compress_ = false;
    Begin(kWait, now);
  }
}

void CompressionTuner::Backlogged(int64_t now) {
  if (phase_ == kWait && negotiated_ && !always_) Begin(kProbePlain, now);
}

bool CompressionTuner::Compress(int64_t now) {
  if (!negotiated_) return false;
  if (always_) return true;
  int64_t elapsed = now - since_;
  double rate = elapsed > 0 ? static_cast<double>(taken_) * 1000 / static_cast<double>(elapsed)
                            : 0;
  switch (phase_) {
    case kWait:
      break;
    case kProbePlain:
      if (started_ && elapsed >= kProbeMs) {
        plain_rate_ = rate;
        Begin(kProbeCompressed, now);
      }
      break;
    case kProbeCompressed:
      if (started_ && elapsed >= kProbeMs) {
        compress_ = rate > plain_rate_ * 1.25;
        Begin(kHold, now);
      }
      break;
    case kHold:
      if (elapsed >= kHoldMs) {
        compress_ = false;
        Begin(kWait, now);
      }
      break;
  }
  switch (phase_) {
    case kWait: return false;
    case kProbePlain: return false;
    case kProbeCompressed: return true;
    case kHold: return compress_;
  }
  return false;
}

std::string EncodeHello(const Hello& h) {
  std::string out;
  PutMagic(out, h.version);
  TlvWriter w(out);
  w.Bytes(1, GuidBytes(h.source));
  w.Bytes(2, h.stream);
  w.Bytes(3, h.link);
  w.Uint(4, h.window);
  w.BytesIfNotEmpty(5, h.compression);
  if (h.reports_errors) w.Uint(6, 1);
  return out;
}

Status DecodeHello(std::string_view payload, Hello& h) {
  std::string_view rest;
  MQ_RETURN_IF_ERROR(TakeMagic(payload, h.version, rest, "hello"));
  if (h.version != kVersion) return {};  // the caller reports the version
  TlvReader rd(rest);
  bool have_source = false;
  while (rd.Next()) {
    switch (rd.tag()) {
      case 1:
        if (rd.bytes().size() != 16) return Malformed("hello");
        h.source = GuidFromBytes(rd.bytes());
        have_source = true;
        break;
      case 2: h.stream = rd.bytes(); break;
      case 3: h.link = rd.bytes(); break;
      case 4: h.window = static_cast<uint32_t>(rd.uint()); break;
      case 5: h.compression = rd.bytes(); break;
      case 6: h.reports_errors = rd.uint() == 1; break;
      default: break;
    }
  }
  if (rd.error() || !have_source || h.stream.empty()) return Malformed("hello");
  return {};
}

std::string EncodeWelcome(const Welcome& w) {
  std::string out;
  PutMagic(out, w.version);
  TlvWriter tw(out);
  tw.Bytes(1, GuidBytes(w.store));
  tw.Uint(2, w.last);
  tw.BytesIfNotEmpty(3, w.compression);
  return out;
}

Status DecodeWelcome(std::string_view payload, Welcome& w) {
  std::string_view rest;
  MQ_RETURN_IF_ERROR(TakeMagic(payload, w.version, rest, "welcome"));
  if (w.version != kVersion) return {};
  TlvReader rd(rest);
  bool have_store = false;
  while (rd.Next()) {
    switch (rd.tag()) {
      case 1:
        if (rd.bytes().size() != 16) return Malformed("welcome");
        w.store = GuidFromBytes(rd.bytes());
        have_store = true;
        break;
      case 2: w.last = rd.uint(); break;
      case 3: w.compression = rd.bytes(); break;
      default: break;
    }
  }
  if (rd.error() || !have_store) return Malformed("welcome");
  return {};
}

void AppendMessageHeader(std::string& out, const MessageHeader& h) {
  PutU64BE(out, h.seq);
  PutU64BE(out, h.prev);
  PutU32BE(out, h.user_msg_seq);
  PutU32BE(out, h.recoverable_seq);
  PutU32BE(out, h.ack_seq);
  PutU32BE(out, h.window);
}

Status DecodeMessageHeader(std::string_view payload, MessageHeader& h) {
  if (payload.size() < kMessageHeaderSize) return Malformed("message");
  h.seq = GetU64BE(payload, 0);
  h.prev = GetU64BE(payload, 8);
  h.user_msg_seq = GetU32BE(payload, 16);
  h.recoverable_seq = GetU32BE(payload, 20);
  h.ack_seq = GetU32BE(payload, 24);
  h.window = GetU32BE(payload, 28);
  if (h.seq == 0 || (h.prev && h.prev >= h.seq)) return Malformed("message");
  return {};
}

Status DecodeMessage(std::string_view payload, MessageHeader& h, Message& m) {
  MQ_RETURN_IF_ERROR(DecodeMessageHeader(payload, h));
  SrmpStream stream;
  Status s = DecodeTransferDoc(payload.substr(kMessageHeaderSize), m, &stream);
  if (!s.ok())
    return Status::Io(fmt::format("message {} of the stream cannot be read ({}): the "
                                  "stream is corrupted",
                                  h.seq, s.text()));
  if (stream.current != h.seq || stream.previous != h.prev)
    return Status::Io(fmt::format("message {} of the stream says it is <Stream> current "
                                  "{}, previous {}: the stream is corrupted",
                                  h.seq, stream.current, stream.previous));
  return {};
}

std::string EncodeAck(const Ack& a) {
  std::string out;
  PutU64BE(out, a.last);
  PutU32BE(out, a.ack_seq);
  PutU32BE(out, a.recoverable_ack_seq);
  PutU32BE(out, static_cast<uint32_t>(a.nacks.size()));
  for (auto [seq, cls] : a.nacks) {
    PutU64BE(out, seq);
    out.push_back(static_cast<char>(cls >> 8));
    out.push_back(static_cast<char>(cls & 0xFF));
  }
  return out;
}

Status DecodeAck(std::string_view payload, Ack& a) {
  if (payload.size() < 20) return Malformed("acknowledgement");
  a.last = GetU64BE(payload, 0);
  a.ack_seq = GetU32BE(payload, 8);
  a.recoverable_ack_seq = GetU32BE(payload, 12);
  uint32_t n = GetU32BE(payload, 16);
  if (payload.size() != 20 + static_cast<size_t>(n) * 10) return Malformed("acknowledgement");
  a.nacks.clear();
  a.nacks.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    size_t p = 20 + i * 10;
    uint16_t cls = static_cast<uint16_t>((static_cast<uint8_t>(payload[p + 8]) << 8) |
                                         static_cast<uint8_t>(payload[p + 9]));
    a.nacks.emplace_back(GetU64BE(payload, p), cls);
  }
  return {};
}

void AppendMessage(std::string& out, const MessageHeader& h, const Message& m,
                   const std::string& stream) {
  AppendMessageHeader(out, h);
  SrmpStream st{stream, h.seq, h.prev};
  AppendSrmp(out, m, &st, false);
}

Status DecodeTransferDoc(std::string_view doc, Message& m, SrmpStream* stream) {
  return DecodeSrmp(doc, m, stream);
}

}  // namespace mq::transfer
