// libFuzzer target: UTF-8 decoding and NFKC normalisation of arbitrary bytes.
#include <cstdint>
#include <string_view>

#include "zibert/text/tokenizer.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  const std::int64_t bad = zibert::invalid_utf8_offset(text);
  try {
    std::vector<char32_t> cps = zibert::utf8_decode(text);
    if (bad >= 0) __builtin_trap();  // decoded what the validator rejects
  } catch (const zibert::Utf8Error&) {
    if (bad < 0) __builtin_trap();  // rejected what the validator accepts
  }
  for (bool lowercase : {false, true}) {
    zibert::Normalization norm{lowercase, true};  // invalid bytes replaced, never thrown
    std::vector<char32_t> out = zibert::normalize(text, norm);
    for (char32_t c : out)
      if (c > 0x10FFFF) __builtin_trap();
  }
  try {
    zibert::normalize(text, zibert::Normalization{});
  } catch (const zibert::Error&) {
  }
  return 0;
}
