#include "zibert/text/vocab.hpp"

#include <algorithm>

#include "zibert/base/error.hpp"
#include "zibert/base/utf8.hpp"

namespace zibert {

Vocab::Vocab(std::vector<char32_t> chars) : chars_(std::move(chars)) {
  index_.reserve(chars_.size());
  for (std::size_t i = 0; i < chars_.size(); ++i) {
    auto [it, fresh] = index_.emplace(chars_[i], static_cast<std::int32_t>(kNumSpecial + i));
    if (!fresh) throw Error("vocabulary lists the character " + code_point_name(chars_[i]) + " twice");
  }
}

std::string Vocab::token(std::int32_t id) const {
  if (id >= 0 && id < kNumSpecial) return kSpecialNames[id];
  if (id < 0 || id >= size()) return "[?]";
  return utf8_encode(chars_[id - kNumSpecial]);
}

std::vector<std::string> Vocab::tokens() const {
  std::vector<std::string> out;
  out.reserve(size());
  for (std::int32_t id = 0; id < size(); ++id) out.push_back(token(id));
  return out;
}

Vocab Vocab::from_tokens(const std::vector<std::string>& tokens) {
  if (tokens.size() < kNumSpecial) throw Error("vocabulary has fewer entries than the 5 special tokens");
  for (int i = 0; i < kNumSpecial; ++i)
    if (tokens[i] != kSpecialNames[i])
      throw Error("vocabulary entry " + std::to_string(i) + " should be " + kSpecialNames[i] + " but is \"" +
                  tokens[i] + "\"");
  std::vector<char32_t> chars;
  chars.reserve(tokens.size() - kNumSpecial);
  for (std::size_t i = kNumSpecial; i < tokens.size(); ++i) {
    std::vector<char32_t> cps;
    try {
      cps = utf8_decode(tokens[i]);  // stored entries are already normalised
    } catch (const Error&) {
      throw Error("vocabulary entry " + std::to_string(i) + " is not valid UTF-8");
    }
    if (cps.size() != 1) throw Error("vocabulary entry " + std::to_string(i) + " is not a single character");
    chars.push_back(cps[0]);
  }
  return Vocab(std::move(chars));
}

void Vocab::set_variants(std::map<char32_t, char32_t> variants) {
  std::unordered_map<char32_t, std::int32_t> ids;
  ids.reserve(variants.size());
  for (const auto& [from, to] : variants) {
    if (has_row(from) || !has_row(to)) {
      const std::string pair = "variant " + utf8_encode(from) + " -> " + utf8_encode(to) + ": ";
      if (has_row(from)) throw Error(pair + utf8_encode(from) + " has a row of its own");
      throw Error(pair + utf8_encode(to) + " is not in the vocabulary");
    }
    ids.emplace(from, id(to));
  }
  variants_ = std::move(variants);
  variant_ids_ = std::move(ids);
}

void VocabBuilder::add(const std::vector<char32_t>& text) {
  for (char32_t cp : text) ++counts_[cp];
}

Vocab VocabBuilder::build(std::int64_t min_count, std::int64_t max_size) const {
  std::vector<std::pair<char32_t, std::int64_t>> items;
  for (const auto& [cp, n] : counts_)
    if (n >= min_count) items.emplace_back(cp, n);
  std::sort(items.begin(), items.end(), [](const auto& a, const auto& b) {
    return a.second != b.second ? a.second > b.second : a.first < b.first;
  });
  if (max_size > 0 && static_cast<std::int64_t>(items.size()) > max_size - kNumSpecial)
    items.resize(static_cast<std::size_t>(std::max<std::int64_t>(max_size - kNumSpecial, 0)));
  std::vector<char32_t> chars;
  chars.reserve(items.size());
  for (const auto& item : items) chars.push_back(item.first);
  return Vocab(std::move(chars));
}

}  // namespace zibert
