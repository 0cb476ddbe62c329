// Text → code points → ids (DESIGN §4).
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "zibert/base/utf8.hpp"
#include "zibert/text/vocab.hpp"

namespace zibert {

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
