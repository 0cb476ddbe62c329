// The text edits synth's kinds are made of: where a piece goes into a base
// sentence and what shape the piece takes (quoted, spaced, cut short,
// scattered). Plain edits of code points; the kinds and labels stay in synth.cpp.
#pragma once
#include <cstddef>
#include <vector>

#include "zibert/base/random.hpp"

namespace zibert::synth_pieces {

using Text = std::vector<char32_t>;

// base with piece inserted before code point at.
Text insert_at(const Text& base, std::size_t at, const Text& piece);
// 。！？.!? : where pos-end inserts before.
bool is_final_punct(char32_t c);
// Any ASCII letter: a Latin name, whose case synth varies.
bool has_latin(const Text& t);

// p in quotation marks: mark 0 “”, 1 「」, 2 《》.
inline constexpr std::size_t kQuoteMarks = 3;
Text quoted(const Text& p, std::size_t mark);
// p's characters with sep between them (佛·跳·墙).
Text joined(const Text& p, const Text& sep);
// A space before the piece, after it, both or neither: Latin among Chinese.
Text spaced_apart(Text piece, Rng& rng);
// Latin letters as given (style 0), lower case (1), UPPER CASE (2) or Title Case (3).
Text latin_case(Text t, int style);
// A name without its last (keep_start) or first word, or character when it
// has one word: "Buddha Jumps Over the", "Jumps Over the Wall", 福寿, 寿全.
Text shortened(const Text& name, bool keep_start);
// A permutation of p other than p itself (p has two different characters at least).
Text permuted(Text p, Rng& rng);
// p's characters in order at distinct gaps of base, so that at least one
// base character stands between each pair (base has p.size() - 1 at least).
Text scattered(const Text& base, const Text& p, Rng& rng);

}  // namespace zibert::synth_pieces
