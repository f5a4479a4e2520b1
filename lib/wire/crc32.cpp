// crc32.cpp: CRC-32 (crc32.hpp).
#include "wire/crc32.hpp"

#include <isa-l/crc.h>

namespace mq::transfer {

uint32_t Crc32(std::string_view data, uint32_t crc) {
  return crc32_gzip_refl(crc, reinterpret_cast<const unsigned char*>(data.data()), data.size());
}

}  // namespace mq::transfer
