// libFuzzer target: the JSONL (after a first JSON line) training-data reader on arbitrary lines.
#include "reader_target.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return fuzz_reader("{\"label\":\"a\",\"text\":\"b\"}\n", data, size);
}
