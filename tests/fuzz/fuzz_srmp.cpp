// fuzz_srmp.cpp: libFuzzer target for the SRMP decoder (lib/wire/srmp.hpp): MIME framing,
// the SOAP envelope (libxml2, DTDs and entities refused) and every property element.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "wire/srmp.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view doc(reinterpret_cast<const char*>(data), size);
  mq::Message m;
  mq::SrmpStream stream;
  (void)mq::DecodeSrmp(doc, m, &stream);
  (void)mq::SrmpDocumentEnd(doc);
  return 0;
}
