// crc32.cpp: CRC-32 (crc32.hpp). The folding constants are those of the paper for the
// reflected IEEE polynomial 0x104C11DB7: x^(4*128+32), x^(4*128-32), x^(128+32), x^(128-32)
// and x^64 mod P (each bit-reflected and shifted left one), then P itself and the Barrett
// constant floor(x^64 / P), for the final reduction.
#include "crc32.hpp"

#include <zlib.h>

#include <algorithm>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define MQ_CRC32_FOLD 1
#endif

namespace mq::transfer {

uint32_t Crc32Zlib(std::string_view data, uint32_t crc) {
  uLong c = crc;
  while (!data.empty()) {
    auto n = static_cast<uInt>(std::min<size_t>(data.size(), 1u << 30));
    c = crc32(c, reinterpret_cast<const Bytef*>(data.data()), n);
    data.remove_prefix(n);
  }
  return static_cast<uint32_t>(c);
}

#ifdef MQ_CRC32_FOLD

namespace {

#define MQ_FOLD_TARGET __attribute__((target("pclmul,sse4.1")))

MQ_FOLD_TARGET inline __m128i Load(const unsigned char* at) {
  return _mm_loadu_si128(reinterpret_cast<const __m128i*>(at));
}

// x times x^k (its two halves by the two constants of k), plus the next data: one step.
MQ_FOLD_TARGET inline __m128i Step(__m128i x, __m128i k, __m128i next) {
  __m128i lo = _mm_clmulepi64_si128(x, k, 0x00);
  __m128i hi = _mm_clmulepi64_si128(x, k, 0x11);
  return _mm_xor_si128(_mm_xor_si128(hi, lo), next);
}

// The CRC register (not inverted: the caller inverts before and after) over `n` bytes, n a
// multiple of 16 and at least 64.
MQ_FOLD_TARGET uint32_t Fold(const unsigned char* p, size_t n, uint32_t crc) {
  const __m128i k1k2 = _mm_set_epi64x(0x01c6e41596, 0x0154442bd4);
  const __m128i k3k4 = _mm_set_epi64x(0x00ccaa009e, 0x01751997d0);
  const __m128i k5 = _mm_set_epi64x(0, 0x0163cd6124);
  const __m128i poly = _mm_set_epi64x(0x01f7011641, 0x01db710641);
  const __m128i low32 = _mm_setr_epi32(~0, 0, ~0, 0);
  __m128i x1 = _mm_xor_si128(Load(p), _mm_cvtsi32_si128(static_cast<int>(crc)));
  __m128i x2 = Load(p + 16), x3 = Load(p + 32), x4 = Load(p + 48);
  p += 64;
  n -= 64;
  // Four lanes, 64 bytes a step.
  while (n >= 64) {
    x1 = Step(x1, k1k2, Load(p));
    x2 = Step(x2, k1k2, Load(p + 16));
    x3 = Step(x3, k1k2, Load(p + 32));
    x4 = Step(x4, k1k2, Load(p + 48));
    p += 64;
    n -= 64;
  }
  // The four into one, then 16 bytes a step.
  x1 = Step(x1, k3k4, x2);
  x1 = Step(x1, k3k4, x3);
  x1 = Step(x1, k3k4, x4);
  while (n >= 16) {
    x1 = Step(x1, k3k4, Load(p));
    p += 16;
    n -= 16;
  }
  // 128 bits to 64, then Barrett's reduction to 32.
  __m128i t = _mm_clmulepi64_si128(x1, k3k4, 0x10);
  x1 = _mm_xor_si128(_mm_srli_si128(x1, 8), t);
  t = _mm_srli_si128(x1, 4);
  x1 = _mm_clmulepi64_si128(_mm_and_si128(x1, low32), k5, 0x00);
  x1 = _mm_xor_si128(x1, t);
  t = _mm_clmulepi64_si128(_mm_and_si128(x1, low32), poly, 0x10);
  t = _mm_clmulepi64_si128(_mm_and_si128(t, low32), poly, 0x00);
  x1 = _mm_xor_si128(x1, t);
  return static_cast<uint32_t>(_mm_extract_epi32(x1, 1));
}

bool CpuFolds() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.1");
}

}  // namespace

bool Crc32Folds() {
  static const bool folds = CpuFolds();
  return folds;
}

uint32_t Crc32(std::string_view data, uint32_t crc) {
  if (data.size() >= 64 && Crc32Folds()) {
    size_t n = data.size() & ~size_t{15};
    crc = ~Fold(reinterpret_cast<const unsigned char*>(data.data()), n, ~crc);
    data.remove_prefix(n);
  }
  return data.empty() ? crc : Crc32Zlib(data, crc);
}

#else

bool Crc32Folds() { return false; }

uint32_t Crc32(std::string_view data, uint32_t crc) { return Crc32Zlib(data, crc); }

#endif

}  // namespace mq::transfer
