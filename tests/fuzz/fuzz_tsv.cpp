// libFuzzer target: the TSV (after a header line) training-data reader on arbitrary lines.
#include "reader_target.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return fuzz_reader("label\ttext\n", data, size);
}
