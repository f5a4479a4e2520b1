// crc32.hpp: the CRC-32 of the transfer protocol's frames (lib/wire/transfer.hpp): IEEE 802.3,
// reflected, as zlib's crc32() computes it. Computed by Intel's ISA-L (crc32_gzip_refl,
// Debian's libisal), which picks a folding kernel for the CPU at run time (PCLMULQDQ on
// x86-64) and is several times faster than zlib's tables on the 2-3 KB frames of a link;
// the figure is the same (tests/unit/transfer_test.cpp checks it against zlib).
#pragma once

#include <cstdint>
#include <string_view>

namespace mq::transfer {

// CRC-32 of `data`, continuing from `crc` (0 to start), as zlib's crc32(crc, data, size).
uint32_t Crc32(std::string_view data, uint32_t crc = 0);

}  // namespace mq::transfer
