// A vocabulary's variant table as a model file's metadata stores it: a JSON
// object of one character to one, {"仏": "佛", …}. It is read from the
// parser's events, without a JSON document: the shipped detector's table has
// 29,957 pairs, and a document of them was the largest part of its load time.
#pragma once
#include <map>
#include <string>
#include <string_view>

namespace zibert {

std::string variant_table_to_json(const std::map<char32_t, char32_t>& variants);

// Throws Error saying what is wrong with the table ("the table is not an
// object of characters", "the variant of "仏" is not a string", ...). A key
// written twice: the last pair counts, as in a JSON document.
// Vocab::set_variants checks the pairs against the vocabulary.
std::map<char32_t, char32_t> variant_table_from_json(std::string_view json);

}  // namespace zibert
