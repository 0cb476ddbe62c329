// The character vocabulary: special tokens, then code points by frequency.
#pragma once
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace zibert {

enum SpecialId : std::int32_t { kPadId = 0, kUnk = 1, kCls = 2, kSep = 3, kMask = 4, kNumSpecial = 5 };
inline constexpr const char* kSpecialNames[kNumSpecial] = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"};

class Vocab {
 public:
  Vocab() = default;
  // chars[i] is the code point of id kNumSpecial + i. Throws on duplicates.
  explicit Vocab(std::vector<char32_t> chars);

  std::int32_t id(char32_t cp) const {  // unknown characters map to [UNK]
    auto it = index_.find(cp);
    return it == index_.end() ? kUnk : it->second;
  }
  std::int64_t size() const { return kNumSpecial + static_cast<std::int64_t>(chars_.size()); }
  const std::vector<char32_t>& chars() const { return chars_; }
  // The printable form of one id: a special's name or the character in UTF-8.
  std::string token(std::int32_t id) const;

  // Every token in id order, as stored in the model file.
  std::vector<std::string> tokens() const;
  // Inverse of tokens(); throws Error naming what is wrong.
  static Vocab from_tokens(const std::vector<std::string>& tokens);

 private:
  std::vector<char32_t> chars_;
  std::unordered_map<char32_t, std::int32_t> index_;
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
