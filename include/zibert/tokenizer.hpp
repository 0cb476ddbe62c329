// Text → code points → ids (DESIGN §4).
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "zibert/error.hpp"
#include "zibert/vocab.hpp"

namespace zibert {

// Invalid UTF-8 in the input; byte is the 0-based offset of the bad sequence.
class Utf8Error : public Error {
 public:
  Utf8Error(std::int64_t byte, const std::string& what) : Error(what), byte(byte) {}
  std::int64_t byte;
};

struct Normalization {
  bool lowercase = false;      // Unicode case folding after NFKC
  bool replace_invalid = false;  // bad UTF-8 bytes become U+FFFD instead of an error
};

// NFKC (and optionally case-fold) the text. Whitespace runs become one U+0020,
// leading and trailing whitespace is dropped, other control characters are
// removed. Throws Utf8Error on invalid UTF-8 unless norm.replace_invalid.
std::vector<char32_t> normalize(std::string_view text, const Normalization& norm);

class Tokenizer {
 public:
  Tokenizer() = default;
  Tokenizer(Vocab vocab, Normalization norm) : vocab_(std::move(vocab)), norm_(norm) {}

  // Ids of the text's characters, without [CLS]/[SEP].
  std::vector<std::int32_t> encode(std::string_view text) const;
  std::vector<std::int32_t> ids(const std::vector<char32_t>& chars) const;

  const Vocab& vocab() const { return vocab_; }
  const Normalization& normalization() const { return norm_; }
  void set_replace_invalid(bool on) { norm_.replace_invalid = on; }

 private:
  Vocab vocab_;
  Normalization norm_;
};

}  // namespace zibert

namespace zibert {
// Code points of UTF-8 text as it is (no normalisation); throws Utf8Error.
std::vector<char32_t> utf8_decode(std::string_view text);

// Byte offset of the first invalid UTF-8 sequence, or -1 when the text is valid.
std::int64_t invalid_utf8_offset(std::string_view text);
}  // namespace zibert
