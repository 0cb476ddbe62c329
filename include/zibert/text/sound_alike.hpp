// What a phrase sounds like: for each of its characters, the characters read
// the same (homophones: 強 and 蔷 for 墙) or one usual confusion away
// (near-homophones), as a pinyin keyboard's typos make them; and the reading
// spelt in Latin letters. synth builds its sound-alike forms from it.
#pragma once
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "zibert/base/random.hpp"
#include "zibert/text/readings.hpp"

namespace zibert {

class PhraseSounds {
 public:
  // syllables: each character's reading(s), toneless (the user's --pinyin, or
  // else the table's readings today, Readings::Use::today); the characters
  // drawn are those read so today. frequency: how often each character occurs in the text the
  // forms go into; draws lean toward common characters. held_out: characters
  // never drawn (kept for measuring how forms never generated fare).
  PhraseSounds(const std::vector<char32_t>& phrase, const std::vector<std::vector<std::string>>& syllables,
               const Readings& readings, const std::unordered_map<char32_t, std::int64_t>& frequency,
               const std::vector<char32_t>& held_out);

  enum class Alike { same, near };
  // The positions with at least one character that sounds so.
  const std::vector<std::size_t>& positions(Alike alike) const { return alike == Alike::same ? same_at_ : near_at_; }
  // A character for position i that sounds so, drawn with weight √count + 0.1
  // (count: its frequency) over the candidates; 0 when there is none.
  char32_t draw(std::size_t i, Alike alike, Rng& rng) const;
  // True when c at position i is a homophone or a near-homophone of the
  // phrase's character there under any of its readings, the given ones and
  // every one the table has (a form no negative may take).
  bool sounds_like(std::size_t i, char32_t c) const;
  // True when text holds the phrase with one character replaced by one that
  // sounds like it (佛跳強, 福跳墙): a typo's form, a mention.
  bool heard_in(const std::vector<char32_t>& text) const;

 private:
  struct Candidates {
    std::vector<char32_t> chars;  // ascending
    std::vector<double> cumulative;
  };
  std::vector<Candidates> same_, near_;       // what draw picks from, per position
  std::vector<std::vector<char32_t>> alike_;  // per position: every homophone and near-homophone (ascending)
  std::vector<std::size_t> same_at_, near_at_;
  std::vector<char32_t> phrase_;
};

// The reading in Latin letters as people type it, without tones, ü as v:
// style 0 fotiaoqiang, 1 fo tiao qiang, 2 Fotiaoqiang, 3 Fo Tiao Qiang, 4 FOTIAOQIANG.
inline constexpr int kPinyinStyles = 5;
std::string pinyin_spelling(const std::vector<std::string>& syllables, int style);

// A phrase's reading as people write it in Latin letters (synth's pinyin
// kinds), a syllable per character.
class PhraseReading {
 public:
  PhraseReading() = default;  // none: the pinyin kinds are off
  // The user's (--pinyin): tones optional (fó, fo2, fo), a character read two
  // ways as fo/fu, the first spelt and each giving typos; given with tone
  // marks, the marked spellings are written too. Throws Error naming a
  // syllable that is not pinyin.
  static PhraseReading given(const std::vector<std::string>& pinyin);
  // Toneless syllables, one reading each (the table's).
  explicit PhraseReading(std::vector<std::string> syllables);

  bool empty() const { return spelt_.empty(); }
  std::size_t size() const { return spelt_.size(); }
  // Each syllable's readings as given (fo/fu), toneless.
  const std::vector<std::vector<std::string>>& ways() const { return ways_; }
  // Syllables [start, start + count) in a style drawn at random: a toneless
  // one (kPinyinStyles), the marked syllables joined or spaced (fótiàoqiáng)
  // when tone marks were given, and with initials the first letters (FTQ,
  // ftq). Without marks or initials the draw is rng.below(kPinyinStyles).
  std::string piece(std::size_t start, std::size_t count, bool initials, Rng& rng) const;

 private:
  std::vector<std::string> spelt_;                 // the first reading of each
  std::vector<std::string> marked_;                // as given with tone marks (empty: none given)
  std::vector<std::vector<std::string>> ways_;
};

}  // namespace zibert
