// fuzz_json.cpp: libFuzzer target for the JSON import (mq-admin import): each line is parsed
// (nlohmann::json, no exceptions) and read as a message (lib/output/format.hpp).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "output/format.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  while (!in.empty()) {
    size_t nl = in.find('\n');
    std::string_view line = in.substr(0, nl);
    in.remove_prefix(nl == std::string_view::npos ? in.size() : nl + 1);
    auto j = nlohmann::ordered_json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded()) continue;
    (void)mq::MessageFromJson(j);
  }
  return 0;
}
