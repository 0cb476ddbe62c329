// Variant tables: which characters may stand for which (仏 for 佛, 緑 for 绿),
// so that a model reads a character it has no row for as a variant it has
// (Vocab::set_variants). data/build-variants writes one from opencc's
// dictionaries; zibert variants attaches it to a model.
#pragma once
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "zibert/base/line_source.hpp"
#include "zibert/text/readings.hpp"
#include "zibert/text/vocab.hpp"

namespace zibert {

// A character and its candidates, in order of preference.
using VariantTable = std::vector<std::pair<char32_t, std::vector<char32_t>>>;

// One entry per line: the character, a tab, its candidates (one or more
// characters, no separator), all as the tokenizer normalises them (NFKC).
// Blank lines and lines starting with # are skipped. Throws error_at(file,
// line) for anything else: a field that is not one character, a candidate
// equal to its character, a character listed twice, invalid UTF-8.
VariantTable read_variant_table(LineSource& in);

// The variants the table offers this vocabulary: for each of the table's
// characters without a row, its first candidate with one.
std::map<char32_t, char32_t> resolve_variants(const Vocab& vocab, const VariantTable& table);

// Sound-alikes: for each character the readings table reads one way only
// (tones dropped) that has no row in the vocabulary, the character with a row
// whose first reading that is, the vocabulary's earliest: its most common when
// the vocabulary was built from counts. 蹂 (róu) reads as 肉 (ròu), so a
// pinyin-keyboard typo the training data never had is not [UNK]. A character
// with several readings stays [UNK]: 啌 (xiāng, qiāng) as 相 would lose the
// reading a typo of 墙 meant. Compatibility ideographs (which NFKC turns into
// others) are left out.
VariantTable sound_alike_table(const Vocab& vocab, const Readings& readings);

// The first few, for messages: "仏 as 佛, 牆 as 墙, ...".
std::string variants_sample(const std::map<char32_t, char32_t>& variants, std::size_t shown = 5);

}  // namespace zibert
