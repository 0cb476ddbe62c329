// Chinese characters' Mandarin readings with the tones dropped: which
// syllables a character is read as, and which characters share a syllable
// (homophones) or sit one usual confusion apart (near-homophones). Read from
// Unicode's Unihan_Readings.txt (Debian's unicode-data ships it bzip2-compressed),
// every reading a character has in kMandarin, kHanyuPinyin and kXHC1983.
#pragma once
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace zibert {

// Where Debian's unicode-data package puts the table.
inline constexpr const char* kDebianUnihanReadings = "/usr/share/unicode/Unihan_Readings.txt.bz2";

// A pinyin syllable without its tone: "fó" → "fo", "lǜ" → "lü", "Qiang" →
// "qiang"; tone numbers are dropped too ("qiang2"). "" when it is not made of
// Latin letters (and ü) alone.
std::string toneless_syllable(std::string_view pinyin);

// The syllables one usual confusion away that sound alike to many speakers:
// the initials z/zh, c/ch, s/sh, n/l, f/h and the finals an/ang, en/eng,
// in/ing ("zhang" → "zang", "zhan"). Whether a character is read so is the
// table's business (Readings::characters).
std::vector<std::string> near_syllables(const std::string& syllable);

class Readings {
 public:
  // Unihan_Readings.txt, plain or bzip2-compressed. Throws Error naming the
  // file and line of a malformed reading, or when no reading is found.
  static Readings load(const std::string& path);
  // The same from the table's text in memory; name is for messages.
  static Readings parse(std::string text, const std::string& name);

  // Which readings: every one the table has, or those of today's dictionaries
  // alone (kMandarin and kXHC1983: what a pinyin keyboard offers).
  // kHanyuPinyin's Hanyu Da Zidian also lists readings out of use: 不 as fū,
  // 包 as fú.
  enum class Use { any, today };
  // Adds a reading (toneless, as toneless_syllable gives); Use::today puts it
  // in both lists, Use::any in the first only. No-op when known.
  void add(char32_t c, const std::string& syllable, Use use = Use::today);
  // The syllables c is read as, in the table's order; empty when unknown.
  const std::vector<std::string>& syllables(char32_t c, Use use = Use::any) const;
  // The characters read as the syllable, in code point order.
  const std::vector<char32_t>& characters(const std::string& syllable, Use use = Use::any) const;
  // True when a and b share a syllable (a character shares one with itself).
  bool homophones(char32_t a, char32_t b) const;
  std::size_t size() const { return any_.by_char.size(); }  // characters with a reading

 private:
  struct Lists {
    std::unordered_map<char32_t, std::vector<std::string>> by_char;
    std::map<std::string, std::vector<char32_t>> by_syllable;
    void add(char32_t c, const std::string& syllable);
  };
  Lists any_, today_;
};

}  // namespace zibert
