// crc32.hpp: the CRC-32 of the transfer protocol's frames (lib/transfer.hpp): IEEE 802.3,
// reflected, as zlib's crc32() computes it. Where the CPU has carry-less multiplication
// (PCLMULQDQ, x86-64 since 2010) the bulk of the data is folded 64 bytes at a time, as in
// Intel's "Fast CRC Computation for Generic Polynomials Using PCLMULQDQ Instruction"
// (Gopal et al., 2009), and the rest goes to zlib; elsewhere zlib does it all. The figure is
// the same either way (tests/unit/transfer_test.cpp checks both against zlib).
#pragma once

#include <cstdint>
#include <string_view>

namespace mq::transfer {

// CRC-32 of `data`, continuing from `crc` (0 to start), as zlib's crc32(crc, data, size).
uint32_t Crc32(std::string_view data, uint32_t crc = 0);

// zlib alone (for the tests: the folded path must agree with it).
uint32_t Crc32Zlib(std::string_view data, uint32_t crc = 0);

// Whether Crc32 folds with PCLMULQDQ on this machine.
bool Crc32Folds();

}  // namespace mq::transfer
