#include "zibert/text/variants.hpp"

#include <algorithm>
#include <set>
#include <string>

#include "zibert/base/error.hpp"
#include "zibert/base/utf8.hpp"
#include "zibert/text/tokenizer.hpp"

namespace zibert {

VariantTable read_variant_table(LineSource& in) {
  VariantTable table;
  std::set<char32_t> seen;
  std::string line;
  for (std::int64_t number = 1; in.next(line); ++number) {
    if (line.empty() || line[0] == '#') continue;
    auto bad = [&](const std::string& what) { return error_at(in.name(), number, what); };
    const std::size_t tab = line.find('\t');
    if (tab == std::string::npos) throw bad("expected a character, a tab and its variants");
    std::vector<char32_t> from, candidates;
    try {
      from = utf8_decode(line.substr(0, tab));
      candidates = utf8_decode(line.substr(tab + 1));
    } catch (const Error& e) {
      throw bad(e.what());
    }
    if (from.size() != 1) throw bad("the first field is not one character");
    if (candidates.empty()) throw bad("no variant after the tab");
    for (char32_t c : candidates) {
      if (c == U'\t') throw bad("more than two fields (the variants take no separator)");
      if (c == from[0]) throw bad("the character is listed as its own variant");
    }
    // The tokenizer looks characters up after NFKC: one it changes is never looked up.
    auto check_normal = [&](char32_t c) {
      if (normalize(utf8_encode(c), Normalization{}) != std::vector<char32_t>{c})
        throw bad(utf8_encode(c) + " (" + code_point_name(c) +
                  ") is not as the tokenizer normalises it (NFKC, no controls or spaces)");
    };
    check_normal(from[0]);
    for (char32_t c : candidates) check_normal(c);
    if (!seen.insert(from[0]).second) throw bad(utf8_encode(from[0]) + " is listed twice");
    table.emplace_back(from[0], std::move(candidates));
  }
  return table;
}

std::map<char32_t, char32_t> resolve_variants(const Vocab& vocab, const VariantTable& table) {
  std::map<char32_t, char32_t> out;
  for (const auto& [from, candidates] : table) {
    if (vocab.has_row(from)) continue;
    for (char32_t to : candidates)
      if (vocab.has_row(to)) {
        out.emplace(from, to);
        break;
      }
  }
  return out;
}

VariantTable sound_alike_table(const Vocab& vocab, const Readings& readings) {
  std::map<std::string, char32_t> best;  // a syllable's earliest character with a row
  for (char32_t c : vocab.chars()) {
    const std::vector<std::string>& syllables = readings.syllables(c);
    if (!syllables.empty()) best.emplace(syllables.front(), c);
  }
  // Only characters read one way (tones aside): 啌 (xiāng, qiāng) read as 相
  // would lose the reading a typo of 墙 meant.
  auto one_reading = [&](char32_t c) { return readings.syllables(c).size() == 1; };
  auto compatibility = [](char32_t c) { return (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F); };
  VariantTable table;
  for (const auto& [syllable, to] : best)
    for (char32_t c : readings.characters(syllable))
      if (!vocab.has_row(c) && !compatibility(c) && one_reading(c))
        table.push_back({c, {to}});
  std::sort(table.begin(), table.end());
  return table;
}

std::string variants_sample(const std::map<char32_t, char32_t>& variants, std::size_t shown) {
  std::string out;
  std::size_t n = 0;
  for (auto it = variants.begin(); it != variants.end() && n < shown; ++it, ++n)
    out += (out.empty() ? "" : ", ") + utf8_encode(it->first) + " as " + utf8_encode(it->second);
  return variants.size() > shown ? out + ", ..." : out;
}

}  // namespace zibert
