// zibert synth: a labelled corpus for a target phrase, built from unlabelled
// sentences by inserting the phrase (positives) or things that look like it
// (hard negatives) — DESIGN §2 synth.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

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
};

// A base sentence and the tag of the corpus it came from ("" for one corpus).
struct BaseSentence {
  std::string text;
  std::string tag;
};

// Splits base sentences between train/dev/test first (so none leaks across
// splits), then generates examples. No negative contains the phrase or a
// variant, even with spaces, · or quotes removed.
SynthCorpus synthesize(const std::vector<BaseSentence>& base, const SynthOptions& options);

// True when text mentions the phrase or a variant, ignoring spaces, tabs, ·
// and quotation marks between the characters (and the extra separators given).
bool mentions(const std::string& text, const std::vector<std::string>& phrases,
              const std::vector<std::string>& separators = {});

}  // namespace zibert
