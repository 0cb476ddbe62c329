// What counts as a mention of a phrase: its characters (or a variant's, or an
// alias's) in order, whatever separators stand between them (spaces, tabs, ·,
// quotation marks, and the caller's own), Latin letters in any case, and not
// right next to a string that makes it something else (红烧肉 in 红烧肉丸子汤,
// given 丸子). synth labels by it; the tests check hand-written sets by it.
#pragma once
#include <string>
#include <vector>

namespace zibert {

// A separator as the user gives it: one to three characters, none a letter or
// a digit (佛-跳-墙, 佛--跳--墙, 佛 . 跳 . 墙); throws Error otherwise.
std::vector<char32_t> separator_text(const std::string& separator);

class MentionMatcher {
 public:
  // Throws Error for a bad separator or an empty not_inside string.
  MentionMatcher(const std::vector<std::string>& phrases, const std::vector<std::string>& separators = {},
                 const std::vector<std::string>& not_inside = {});
  bool operator()(const std::vector<char32_t>& text) const;
  // text without the separators, Latin letters lower-cased: what is matched.
  std::vector<char32_t> bare(const std::vector<char32_t>& text) const;

 private:
  std::vector<char32_t> extra_;                    // every character of the caller's separators
  std::vector<std::vector<char32_t>> patterns_, not_inside_;  // bare, as matched
};

// MentionMatcher(phrases, separators, not_inside)(text) for UTF-8 text.
bool mentions(const std::string& text, const std::vector<std::string>& phrases,
              const std::vector<std::string>& separators = {}, const std::vector<std::string>& not_inside = {});

}  // namespace zibert
