// zibert synth: a labelled corpus for a target phrase, built from unlabelled
// sentences by inserting the phrase (positives) or things that look like it
// (hard negatives) — DESIGN §2 synth.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "zibert/text/mentions.hpp"
#include "zibert/text/readings.hpp"

namespace zibert {

struct SynthOptions {
  std::string phrase;                   // e.g. 佛跳墙
  std::vector<std::string> variants;    // other spellings that count as the phrase (佛跳牆, 佛跳墻)
  std::vector<std::string> near_misses; // words that must stay negative (狗急跳墙, 仿佛, 佛跳过墙 …)
  std::vector<std::string> dish_forms;  // templates with {} for the phrase inside longer names (一锅{})
  // More separators pos-spaced may put between the phrase's characters, beside
  // space and · (佛-跳-墙, 佛_跳_墙, 佛--跳--墙, 佛 . 跳 . 墙): one to three
  // characters, no letter or digit. Negatives never form the phrase through
  // any of their characters either.
  std::vector<std::string> separators;
  // The forms that are not the phrase's characters: each kind is on when what
  // it needs is given and its share (of the positives) is above zero.
  const Readings* readings = nullptr;   // homophones and near-homophones come from it
  std::vector<std::string> pinyin;      // the phrase's reading, a syllable per character (fo tiao qiang);
                                        // default: each character's readings today
  std::vector<std::string> aliases;     // other names and translations, used as the phrase is
  std::vector<std::string> not_inside;  // a match next to one of these is no mention (丸子 for 红烧肉)
  std::vector<std::string> held_out;    // characters never generated as homophones (for measuring)
  double homophone_share = 0.12;        // pos-homophone: one character replaced by a homophone
  double near_homophone_share = 0.04;   // pos-near-homophone: by a character one usual confusion away
  double pinyin_share = 0.08;           // pos-pinyin: the reading in Latin letters
  bool pinyin_initials = false;         // pos-pinyin also writes the syllables' initials (FTQ, ftq)
  double alias_share = 0.12;            // pos-alias: an alias in the forms the phrase takes
  std::uint64_t seed = 1;
  double dev_fraction = 0.1, test_fraction = 0.1;
  std::int64_t copies = 1;              // examples generated per base sentence
};

struct SynthExample {
  std::string label;     // "1" or "0"
  std::string text;
  std::string category;  // e.g. pos-quoted, neg-scattered (+ "/" + corpus tag)
};

struct SynthCorpus {
  std::vector<SynthExample> train, dev, test;
  std::map<std::string, std::int64_t> skipped;  // why base sentences were not used, with counts
  std::vector<std::string> notes;                // kinds that are off, and why
};

// A base sentence and the tag of the corpus it came from ("" for one corpus).
struct BaseSentence {
  std::string text;
  std::string tag;
};

// Splits base sentences between train/dev/test first (so none leaks across
// splits), then generates examples. No negative mentions the phrase, a
// variant or an alias (MentionMatcher: through spaces, · or quotes too).
SynthCorpus synthesize(const std::vector<BaseSentence>& base, const SynthOptions& options);

}  // namespace zibert
