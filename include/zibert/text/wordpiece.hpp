// BERT's WordPiece tokenizer, exactly as Hugging Face's tokenizers library
// runs it for BertTokenizer(Fast): special tokens matched in the raw text
// first, then on the rest BertNormalizer (clean the text, space out CJK
// ideographs, strip accents, lower-case), BertPreTokenizer (split on
// whitespace, isolate punctuation) and greedy longest-match-first WordPiece
// with "##" continuations. The imported models of real Chinese BERTs read text
// with it; zibert's own models keep their character tokenizer.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "zibert/text/vocab.hpp"

namespace zibert {

// What tokenizer_config.json (or tokenizer.json's normalizer) says; the
// defaults are Hugging Face's.
struct WordPieceOptions {
  bool clean_text = true;            // drop control characters, any whitespace becomes a space
  bool handle_chinese_chars = true;  // tokenize_chinese_chars: each CJK ideograph a word of its own
  std::optional<bool> strip_accents;  // unset: as lowercase
  bool lowercase = true;             // do_lower_case
  std::int64_t max_input_chars_per_word = 100;  // a longer word is [UNK]
  bool strips_accents() const { return strip_accents.value_or(lowercase); }
};

// The options as a model file's metadata "tokenizer" stores them
// ({"kind": "wordpiece", "lowercase": …}), and back; throws Error naming a
// wrong field.
nlohmann::json wordpiece_to_json(const WordPieceOptions& options);
WordPieceOptions wordpiece_from_json(const nlohmann::json& j);

class WordPiece {
 public:
  WordPiece() = default;
  // tokens[i] is id i (vocab.txt's lines). Throws Error on an empty or
  // duplicated token, or when [PAD] is not id 0, [UNK], [CLS], [SEP] or
  // [MASK] is missing (zibert pads with id 0; every released BERT does).
  WordPiece(std::vector<std::string> tokens, WordPieceOptions options);

  // The ids of a text (code points, as written), without [CLS]/[SEP].
  std::vector<std::int32_t> encode(const std::vector<char32_t>& text) const;
  std::vector<std::int32_t> encode(std::string_view utf8) const;

  const std::vector<std::string>& tokens() const { return tokens_; }
  const WordPieceOptions& options() const { return options_; }
  const SpecialIds& specials() const { return specials_; }
  std::int64_t size() const { return static_cast<std::int64_t>(tokens_.size()); }
  std::int32_t id(std::string_view token) const;  // -1 when absent

 private:
  void normalize_and_split(const std::u32string& text, std::vector<std::int32_t>& out) const;
  void word_pieces(const std::u32string& word, std::vector<std::int32_t>& out) const;

  std::vector<std::string> tokens_;
  std::unordered_map<std::string, std::int32_t> index_;
  WordPieceOptions options_;
  SpecialIds specials_;
  std::vector<std::pair<std::u32string, std::int32_t>> special_forms_;  // matched before normalisation
};

}  // namespace zibert
