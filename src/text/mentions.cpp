#include "zibert/text/mentions.hpp"

#include <utf8proc.h>

#include <algorithm>

#include "zibert/base/error.hpp"
#include "zibert/base/utf8.hpp"

namespace zibert {
namespace {

using Text = std::vector<char32_t>;

bool is_standard_separator(char32_t c) {
  static const std::u32string kSeparators = U" \t\u00B7\u2022\u30FB\u201C\u201D\u300C\u300D\u300E\u300F\u300A\u300B\"'\u2018\u2019";
  return kSeparators.find(c) != std::u32string::npos;
}

}  // namespace

Text separator_text(const std::string& s) {
  const Text t = utf8_decode(s);
  if (t.empty() || t.size() > 3)
    throw Error("synth: a separator must be one to three characters, not \"" + s + "\"");
  for (char32_t c : t) {
    const utf8proc_category_t cat = utf8proc_category(static_cast<utf8proc_int32_t>(c));
    if ((cat >= UTF8PROC_CATEGORY_LU && cat <= UTF8PROC_CATEGORY_LO) ||
        (cat >= UTF8PROC_CATEGORY_ND && cat <= UTF8PROC_CATEGORY_NO))
      throw Error("synth: a separator may not hold letters or digits, as \"" + s + "\" does");
  }
  return t;
}

MentionMatcher::MentionMatcher(const std::vector<std::string>& phrases, const std::vector<std::string>& separators,
                               const std::vector<std::string>& not_inside) {
  for (const std::string& s : separators)
    for (char32_t c : separator_text(s))
      if (std::find(extra_.begin(), extra_.end(), c) == extra_.end()) extra_.push_back(c);
  for (const std::string& p : phrases) patterns_.push_back(bare(utf8_decode(p)));
  for (const std::string& n : not_inside) {
    not_inside_.push_back(bare(utf8_decode(n)));
    if (not_inside_.back().empty()) throw Error("synth: --not-inside \"" + n + "\" is empty");
  }
}

Text MentionMatcher::bare(const Text& text) const {
  Text out;
  for (char32_t c : text)
    if (!is_standard_separator(c) && std::find(extra_.begin(), extra_.end(), c) == extra_.end())
      out.push_back(c >= U'A' && c <= U'Z' ? c + 32 : c);
  return out;
}

bool MentionMatcher::operator()(const Text& text) const {
  const Text b = bare(text);
  for (const Text& p : patterns_) {
    if (p.empty()) continue;
    for (auto at = b.begin(); (at = std::search(at, b.end(), p.begin(), p.end())) != b.end(); ++at) {
      const auto after = at + static_cast<std::ptrdiff_t>(p.size());
      const auto next_to = [&](const Text& n) {
        const auto len = static_cast<std::ptrdiff_t>(n.size());
        return (b.end() - after >= len && std::equal(n.begin(), n.end(), after)) ||
               (at - b.begin() >= len && std::equal(n.begin(), n.end(), at - len));
      };
      if (std::none_of(not_inside_.begin(), not_inside_.end(), next_to)) return true;
    }
  }
  return false;
}

bool mentions(const std::string& text, const std::vector<std::string>& phrases,
              const std::vector<std::string>& separators, const std::vector<std::string>& not_inside) {
  return MentionMatcher(phrases, separators, not_inside)(utf8_decode(text));
}

}  // namespace zibert
