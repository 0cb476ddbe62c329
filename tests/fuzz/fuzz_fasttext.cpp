// libFuzzer target: the fastText (after a first __label__ line) training-data reader on arbitrary lines.
#include "reader_target.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return fuzz_reader("__label__a b\n", data, size);
}
