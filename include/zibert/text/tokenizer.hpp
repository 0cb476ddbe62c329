// Text → code points → ids (DESIGN §4).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "zibert/base/utf8.hpp"
#include "zibert/text/vocab.hpp"
#include "zibert/text/wordpiece.hpp"

namespace zibert {

struct Normalization {
  bool lowercase = false;      // Unicode case folding after NFKC
  bool replace_invalid = false;  // bad UTF-8 bytes become U+FFFD instead of an error
};

// NFKC (and optionally case-fold) the text. Whitespace runs become one U+0020,
// leading and trailing whitespace is dropped, other control characters are
// removed. Throws Utf8Error on invalid UTF-8 unless norm.replace_invalid.
std::vector<char32_t> normalize(std::string_view text, const Normalization& norm);

// Which tokenizer a model reads text with: zibert's own (one id per
// character after NFKC, vocab.hpp) or BERT's WordPiece (wordpiece.hpp), which
// the imported checkpoints of real BERTs need.
enum class TokenizerKind { character, wordpiece };
const char* tokenizer_kind_name(TokenizerKind kind);

class Tokenizer {
 public:
  Tokenizer() = default;
  Tokenizer(Vocab vocab, Normalization norm) : vocab_(std::move(vocab)), norm_(norm) {}
  explicit Tokenizer(WordPiece wordpiece) : wordpiece_(std::make_shared<const WordPiece>(std::move(wordpiece))) {}

  TokenizerKind kind() const { return wordpiece_ ? TokenizerKind::wordpiece : TokenizerKind::character; }
  // The text as this tokenizer reads it, one code point each: the character
  // tokenizer's normalize(); for WordPiece the code points as written (its
  // normalisation runs in ids(), after the special tokens are found). Throws
  // Utf8Error on invalid UTF-8 unless set_replace_invalid.
  std::vector<char32_t> prepare(std::string_view text) const;
  // Ids of prepared text, without [CLS]/[SEP].
  std::vector<std::int32_t> ids(const std::vector<char32_t>& chars) const;
  std::vector<std::int32_t> encode(std::string_view text) const { return ids(prepare(text)); }

  // The printable form of one id: a special's name, the character, or the piece.
  std::string token(std::int32_t id) const;
  std::int64_t size() const { return wordpiece_ ? wordpiece_->size() : vocab_.size(); }
  SpecialIds specials() const { return wordpiece_ ? wordpiece_->specials() : SpecialIds{}; }

  // The character vocabulary (empty for WordPiece) and its normalisation.
  const Vocab& vocab() const { return vocab_; }
  const Normalization& normalization() const { return norm_; }
  const WordPiece* wordpiece() const { return wordpiece_.get(); }
  void set_replace_invalid(bool on) { norm_.replace_invalid = on; }

 private:
  Vocab vocab_;
  Normalization norm_;
  std::shared_ptr<const WordPiece> wordpiece_;
};

}  // namespace zibert
