// crc32.cpp: CRC-32 (crc32.hpp).
#include "wire/crc32.hpp"

#include <isa-l/crc.h>
#include <zlib.h>

#include <algorithm>

namespace mq::transfer {

uint32_t Crc32(std::string_view data, uint32_t crc) {
  return crc32_gzip_refl(crc, reinterpret_cast<const unsigned char*>(data.data()), data.size());
}

uint32_t Crc32Zlib(std::string_view data, uint32_t crc) {
  uLong c = crc;
  while (!data.empty()) {
    auto n = static_cast<uInt>(std::min<size_t>(data.size(), 1u << 30));
    c = crc32(c, reinterpret_cast<const Bytef*>(data.data()), n);
    data.remove_prefix(n);
  }
  return static_cast<uint32_t>(c);
}

}  // namespace mq::transfer
