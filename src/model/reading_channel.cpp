#include "zibert/model/reading_channel.hpp"

#include <algorithm>
#include <map>
#include <set>

#include "zibert/base/error.hpp"
#include "zibert/base/utf8.hpp"

namespace zibert {

namespace {

// The one character a token stands for, or 0.
char32_t single_character(std::string_view token) {
  if (token.starts_with("##")) token.remove_prefix(2);
  const std::vector<char32_t> chars = utf8_decode(token);
  return chars.size() == 1 ? chars[0] : 0;
}

}  // namespace

std::shared_ptr<const TokenReadings> token_readings(const std::vector<std::string>& tokens, const Readings& table,
                                                    const TokenReadings* from) {
  auto out = std::make_shared<TokenReadings>();
  const std::size_t kept = from ? from->of_token.size() : 0;
  if (kept > tokens.size()) throw Error("the reading channel's vocabulary is larger than the model's");
  if (from) *out = *from;
  out->of_token.resize(tokens.size());
  // New syllables take rows after the kept ones, in the order the sorted set gives.
  std::set<std::string> fresh;
  for (std::size_t id = kept; id < tokens.size(); ++id)
    if (const char32_t c = single_character(tokens[id]))
      for (const std::string& s : table.syllables(c)) fresh.insert(s);
  std::map<std::string, std::int32_t> row;
  for (std::size_t r = 0; r < out->syllables.size(); ++r) row[out->syllables[r]] = static_cast<std::int32_t>(r);
  for (const std::string& s : fresh)
    if (row.emplace(s, static_cast<std::int32_t>(out->syllables.size())).second) out->syllables.push_back(s);
  for (std::size_t id = kept; id < tokens.size(); ++id)
    if (const char32_t c = single_character(tokens[id]))
      for (const std::string& s : table.syllables(c)) out->of_token[id].push_back(row.at(s));
  if (out->syllables.empty()) throw Error("no token of the vocabulary has a reading in the readings table");
  return out;
}

}  // namespace zibert
