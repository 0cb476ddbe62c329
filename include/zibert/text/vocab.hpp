// The character vocabulary: special tokens, then code points by frequency.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

namespace zibert {

enum SpecialId : std::int32_t { kPadId = 0, kUnk = 1, kCls = 2, kSep = 3, kMask = 4, kNumSpecial = 5 };
inline constexpr const char* kSpecialNames[kNumSpecial] = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"};

// The ids of the special tokens a model wraps and masks text with: the
// defaults are zibert's character vocabulary's; a WordPiece vocabulary has
// them where its vocab.txt puts them.
struct SpecialIds {
  std::int32_t pad = kPadId, unk = kUnk, cls = kCls, sep = kSep, mask = kMask;
  // Masking's random replacements come from [first_regular, vocabulary size):
  // past the specials for zibert's vocabulary; all of it for WordPiece, as
  // Hugging Face's data collator draws them.
  std::int32_t first_regular = kNumSpecial;
  bool contains(std::int32_t id) const { return id == pad || id == unk || id == cls || id == sep || id == mask; }
};

class Vocab {
 public:
  Vocab() = default;
  // chars[i] is the code point of id kNumSpecial + i. Throws on duplicates.
  explicit Vocab(std::vector<char32_t> chars);

  // A character's row; else its variant's (below); else [UNK].
  std::int32_t id(char32_t cp) const {
    if (auto it = index_.find(cp); it != index_.end()) return it->second;
    auto it = variant_ids_.find(cp);
    return it == variant_ids_.end() ? kUnk : it->second;
  }
  bool has_row(char32_t cp) const { return index_.count(cp) != 0; }
  std::int64_t size() const { return kNumSpecial + static_cast<std::int64_t>(chars_.size()); }
  const std::vector<char32_t>& chars() const { return chars_; }
  // The printable form of one id: a special's name or the character in UTF-8.
  std::string token(std::int32_t id) const;

  // Every token in id order, as stored in the model file.
  std::vector<std::string> tokens() const;
  // Inverse of tokens(); throws Error naming what is wrong.
  static Vocab from_tokens(const std::vector<std::string>& tokens);

  // Variants: characters without a row that read as another character's row
  // (仏 as 佛, 緑 as 绿), so a script or form the training data lacked is not
  // [UNK] (zibert variants attaches them). Each key has no row, each value has
  // one; throws Error naming the pair otherwise. Replaces the ones there were.
  void set_variants(std::map<char32_t, char32_t> variants);
  const std::map<char32_t, char32_t>& variants() const { return variants_; }

 private:
  std::vector<char32_t> chars_;
  std::unordered_map<char32_t, std::int32_t> index_;
  std::map<char32_t, char32_t> variants_;
  std::unordered_map<char32_t, std::int32_t> variant_ids_;
};

// Counts characters of normalised texts and builds a deterministic vocabulary:
// most frequent first, ties broken by code point.
class VocabBuilder {
 public:
  void add(const std::vector<char32_t>& text);
  // Characters seen at least min_count times; with max_size > 0 the most
  // frequent of them, so that the vocabulary (specials included) has at most max_size ids.
  Vocab build(std::int64_t min_count, std::int64_t max_size = 0) const;

 private:
  std::unordered_map<char32_t, std::int64_t> counts_;
};

}  // namespace zibert
