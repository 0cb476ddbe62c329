#include "synth_pieces.hpp"

#include <algorithm>
#include <array>

namespace zibert::synth_pieces {

Text insert_at(const Text& base, std::size_t at, const Text& piece) {
  Text out(base.begin(), base.begin() + static_cast<std::ptrdiff_t>(at));
  out.insert(out.end(), piece.begin(), piece.end());
  out.insert(out.end(), base.begin() + static_cast<std::ptrdiff_t>(at), base.end());
  return out;
}

bool is_final_punct(char32_t c) { return c == U'。' || c == U'！' || c == U'？' || c == U'.' || c == U'!' || c == U'?'; }

namespace {
bool is_ascii_letter(char32_t c) { return (c | 32) >= U'a' && (c | 32) <= U'z'; }
}  // namespace

bool has_latin(const Text& t) { return std::any_of(t.begin(), t.end(), is_ascii_letter); }

Text quoted(const Text& p, std::size_t mark) {
  static const std::array<std::pair<char32_t, char32_t>, kQuoteMarks> kQuotes{
      {{U'\u201C', U'\u201D'}, {U'\u300C', U'\u300D'}, {U'\u300A', U'\u300B'}}};
  const auto [open, close] = kQuotes[mark];
  Text piece{open};
  piece.insert(piece.end(), p.begin(), p.end());
  piece.push_back(close);
  return piece;
}

Text joined(const Text& p, const Text& sep) {
  Text piece;
  for (char32_t c : p) {
    if (!piece.empty()) piece.insert(piece.end(), sep.begin(), sep.end());
    piece.push_back(c);
  }
  return piece;
}

Text spaced_apart(Text piece, Rng& rng) {
  const auto where = rng.below(4);
  if (where & 1) piece.insert(piece.begin(), U' ');
  if (where & 2) piece.push_back(U' ');
  return piece;
}

Text latin_case(Text t, int style) {
  bool word_start = true;
  for (char32_t& c : t) {
    const bool letter = is_ascii_letter(c);
    if (letter && (style == 2 || (style == 3 && word_start))) c &= ~char32_t(32);
    else if (letter && (style == 1 || style == 3)) c |= 32;
    word_start = !letter && c != U'\'';
  }
  return t;
}

Text shortened(const Text& name, bool keep_start) {
  const auto space = keep_start ? std::find(name.rbegin(), name.rend(), U' ').base()
                                : std::find(name.begin(), name.end(), U' ');
  if (!has_latin(name) || space == name.begin() || space == name.end())
    return keep_start ? Text(name.begin(), name.end() - 1) : Text(name.begin() + 1, name.end());
  return keep_start ? Text(name.begin(), space - 1) : Text(space + 1, name.end());
}

Text permuted(Text p, Rng& rng) {
  const Text original = p;
  do {
    for (std::size_t i = p.size(); i > 1; --i) std::swap(p[i - 1], p[rng.below(i)]);
  } while (p == original);
  return p;
}

Text scattered(const Text& base, const Text& p, Rng& rng) {
  std::vector<std::size_t> gaps(base.size() + 1);
  for (std::size_t i = 0; i < gaps.size(); ++i) gaps[i] = i;
  seeded_shuffle(gaps, rng.next());
  gaps.resize(p.size());
  std::sort(gaps.begin(), gaps.end());
  Text out;
  std::size_t prev = 0;
  for (std::size_t i = 0; i < p.size(); ++i) {
    out.insert(out.end(), base.begin() + static_cast<std::ptrdiff_t>(prev),
               base.begin() + static_cast<std::ptrdiff_t>(gaps[i]));
    out.push_back(p[i]);
    prev = gaps[i];
  }
  out.insert(out.end(), base.begin() + static_cast<std::ptrdiff_t>(prev), base.end());
  return out;
}

}  // namespace zibert::synth_pieces
