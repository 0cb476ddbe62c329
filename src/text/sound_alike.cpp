#include "zibert/text/sound_alike.hpp"

#include <algorithm>
#include <cmath>

#include "zibert/base/error.hpp"

namespace zibert {
namespace {

// The CJK Unified Ideographs block: what a pinyin keyboard offers; the
// extensions hold rare characters it seldom does.
bool is_common_han(char32_t c) { return c >= 0x4E00 && c <= 0x9FFF; }

void add_sorted(std::vector<char32_t>& v, char32_t c) {
  auto it = std::lower_bound(v.begin(), v.end(), c);
  if (it == v.end() || *it != c) v.insert(it, c);
}

bool has(const std::vector<char32_t>& sorted, char32_t c) { return std::binary_search(sorted.begin(), sorted.end(), c); }

}  // namespace

PhraseSounds::PhraseSounds(const std::vector<char32_t>& phrase, const std::vector<std::vector<std::string>>& syllables,
                           const Readings& readings, const std::unordered_map<char32_t, std::int64_t>& frequency,
                           const std::vector<char32_t>& held_out)
    : phrase_(phrase) {
  auto weight = [&](char32_t c) {
    auto it = frequency.find(c);
    return std::sqrt(double(it == frequency.end() ? 0 : it->second)) + 0.1;
  };
  for (std::size_t i = 0; i < phrase.size(); ++i) {
    // What is drawn: the characters read today as the readings given, or else
    // as the character's readings today (佛: fo and fu).
    using Use = Readings::Use;
    const std::vector<std::string>& mine =
        i < syllables.size() ? syllables[i] : readings.syllables(phrase[i], Use::today);
    // What sounds alike: the characters read so in any dictionary, as any
    // reading the table has (佛 given as fo is still fu, bo and bi to someone
    // who reads it so).
    std::vector<std::string> every = mine;
    for (const std::string& s : readings.syllables(phrase[i]))
      if (std::find(every.begin(), every.end(), s) == every.end()) every.push_back(s);
    auto alike_to = [&](const std::vector<std::string>& readings_of, Use use) {
      std::vector<char32_t> same, near;
      for (const std::string& s : readings_of)
        for (char32_t c : readings.characters(s, use)) add_sorted(same, c);
      for (const std::string& s : readings_of)
        for (const std::string& n : near_syllables(s))
          for (char32_t c : readings.characters(n, use))
            if (!has(same, c)) add_sorted(near, c);
      return std::make_pair(same, near);
    };
    const auto [same, near] = alike_to(mine, Use::today);
    auto candidates = [&](const std::vector<char32_t>& list) {
      Candidates cand;
      double total = 0;
      for (char32_t c : list)
        if (c != phrase[i] && is_common_han(c) && std::find(held_out.begin(), held_out.end(), c) == held_out.end()) {
          cand.chars.push_back(c);
          cand.cumulative.push_back(total += weight(c));
        }
      return cand;
    };
    same_.push_back(candidates(same));
    near_.push_back(candidates(near));
    // Every reading's characters, the held-out and rare ones too, sound alike.
    auto [alike, near_every] = alike_to(every, Use::any);
    alike.insert(alike.end(), near_every.begin(), near_every.end());
    std::sort(alike.begin(), alike.end());
    alike_.push_back(std::move(alike));
    if (!same_.back().chars.empty()) same_at_.push_back(i);
    if (!near_.back().chars.empty()) near_at_.push_back(i);
  }
}

char32_t PhraseSounds::draw(std::size_t i, Alike alike, Rng& rng) const {
  const Candidates& cand = (alike == Alike::same ? same_ : near_).at(i);
  if (cand.chars.empty()) return 0;
  const double u = rng.uniform() * cand.cumulative.back();
  const auto at = std::upper_bound(cand.cumulative.begin(), cand.cumulative.end(), u) - cand.cumulative.begin();
  return cand.chars[std::min<std::size_t>(static_cast<std::size_t>(at), cand.chars.size() - 1)];
}

bool PhraseSounds::sounds_like(std::size_t i, char32_t c) const { return i < alike_.size() && has(alike_[i], c); }

bool PhraseSounds::heard_in(const std::vector<char32_t>& text) const {
  for (std::size_t s = 0; s + phrase_.size() <= text.size(); ++s) {
    std::size_t changed = 0;
    bool alike = true;
    for (std::size_t i = 0; i < phrase_.size() && alike && changed < 2; ++i)
      if (text[s + i] != phrase_[i]) {
        ++changed;
        alike = sounds_like(i, text[s + i]);
      }
    if (alike && changed == 1) return true;
  }
  return false;
}

std::string pinyin_spelling(const std::vector<std::string>& syllables, int style) {
  std::string out;
  for (const std::string& s : syllables) {
    if (!out.empty() && (style == 1 || style == 3)) out += ' ';
    std::string word;
    for (std::size_t k = 0; k < s.size(); ++k) {
      if (s.compare(k, 2, "\u00FC") == 0) {  // ü, typed v
        word += 'v';
        ++k;
      } else {
        word += s[k];
      }
    }
    const bool first = out.empty();
    auto upper = [](char& ch) { if (ch >= 'a' && ch <= 'z') ch = static_cast<char>(ch - 'a' + 'A'); };
    if (style == 4)
      for (char& ch : word) upper(ch);
    else if (!word.empty() && (style == 3 || (style == 2 && first)))
      upper(word[0]);
    out += word;
  }
  return out;
}

PhraseReading::PhraseReading(std::vector<std::string> syllables) : spelt_(std::move(syllables)) {
  for (const std::string& s : spelt_) ways_.push_back({s});
}

PhraseReading PhraseReading::given(const std::vector<std::string>& pinyin) {
  PhraseReading r;
  bool marked = false;  // tone marks given (fó tiào qiáng): written so too
  for (const std::string& given : pinyin) {
    std::vector<std::string> ways;
    for (std::size_t from = 0;;) {
      const std::size_t slash = given.find('/', from);
      const std::string one = given.substr(from, slash == std::string::npos ? std::string::npos : slash - from);
      ways.push_back(toneless_syllable(one));
      if (ways.back().empty()) throw Error("--pinyin \"" + one + "\" is not a pinyin syllable");
      if (slash == std::string::npos) break;
      from = slash + 1;
    }
    r.spelt_.push_back(ways.front());
    r.ways_.push_back(std::move(ways));
    std::string lower = given.substr(0, given.find('/'));
    for (char& ch : lower)
      if (ch >= 'A' && ch <= 'Z') ch = static_cast<char>(ch - 'A' + 'a');
    marked = marked || (lower != r.spelt_.back() && lower.find_first_of("0123456789") == std::string::npos);
    r.marked_.push_back(std::move(lower));
  }
  if (!marked) r.marked_.clear();
  return r;
}

std::string PhraseReading::piece(std::size_t start, std::size_t count, bool initials, Rng& rng) const {
  const auto from = static_cast<std::ptrdiff_t>(start), to = static_cast<std::ptrdiff_t>(start + count);
  const int marked = marked_.empty() ? 0 : 2;
  const int style = static_cast<int>(rng.below(kPinyinStyles + marked + (initials ? 2 : 0)));
  if (style < kPinyinStyles) return pinyin_spelling({spelt_.begin() + from, spelt_.begin() + to}, style);
  std::string out;
  if (style >= kPinyinStyles + marked) {  // initials: FTQ, then ftq
    for (auto it = spelt_.begin() + from; it != spelt_.begin() + to; ++it)
      out += static_cast<char>(style == kPinyinStyles + marked ? (*it)[0] - 'a' + 'A' : (*it)[0]);
    return out;
  }
  for (auto it = marked_.begin() + from; it != marked_.begin() + to; ++it)
    out += (out.empty() || style == kPinyinStyles ? "" : " ") + *it;
  return out;
}

}  // namespace zibert
