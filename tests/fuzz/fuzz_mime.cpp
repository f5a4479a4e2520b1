// fuzz_mime.cpp: libFuzzer target for the MIME framing of SRMP documents
// (lib/wire/srmp_mime.hpp), which reads HTTP headers and multipart boundaries from another
// machine (accept, import --format srmp). The framing must take linear time: a slow input
// shows as a libFuzzer timeout.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "wire/srmp_mime.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view doc(reinterpret_cast<const char*>(data), size);
  mq::srmp_mime::Framing f;
  (void)mq::srmp_mime::Frame(doc, f);
  return 0;
}
