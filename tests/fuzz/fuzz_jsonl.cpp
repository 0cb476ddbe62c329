// libFuzzer target: the JSONL (after a first JSON line) training-data reader on arbitrary lines.
#include <cstdint>
#include <sstream>
#include <string>

#include "zibert/dataset.hpp"
#include "zibert/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  // The first line fixes the format the reader detects; the input follows it.
  std::string text = "{\"label\":\"a\",\"text\":\"b\"}\n";
  text.append(reinterpret_cast<const char*>(data), size);
  std::istringstream in(text);
  try {
    zibert::Dataset d = zibert::parse_dataset(in, "fuzz");
    for (const zibert::Example& ex : d.rows)
      if (ex.label.empty() || ex.line < 1) __builtin_trap();
  } catch (const zibert::Error&) {
  }
  return 0;
}
