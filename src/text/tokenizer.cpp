#include "zibert/text/tokenizer.hpp"

#include "zibert/base/utf8.hpp"

#include <utf8proc.h>

#include <cstdlib>
#include <memory>

namespace zibert {
namespace {

bool is_whitespace(char32_t cp) {
  if (cp == U' ' || cp == U'\t' || cp == U'\n' || cp == U'\r' || cp == U'\v' || cp == U'\f') return true;
  if (cp == 0x85 || cp == 0x2028 || cp == 0x2029) return true;
  return utf8proc_category(static_cast<utf8proc_int32_t>(cp)) == UTF8PROC_CATEGORY_ZS;
}

bool is_control(char32_t cp) {
  return utf8proc_category(static_cast<utf8proc_int32_t>(cp)) == UTF8PROC_CATEGORY_CC;
}


}  // namespace

std::vector<char32_t> normalize(std::string_view text, const Normalization& norm) {
  std::string valid = validate_utf8(text, norm.replace_invalid);
  // NFKC, and the "default ignorable" characters dropped (zero-width space,
  // joiners, word joiner, soft hyphen, BOM, bidi marks, variation
  // selectors): invisible, so 佛\u200B跳墙 reads as the 佛跳墙 a reader sees.
  int options = UTF8PROC_STABLE | UTF8PROC_COMPOSE | UTF8PROC_COMPAT | UTF8PROC_IGNORE;
  if (norm.lowercase) options |= UTF8PROC_CASEFOLD;
  utf8proc_uint8_t* mapped = nullptr;
  utf8proc_ssize_t len = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(valid.data()),
                                      static_cast<utf8proc_ssize_t>(valid.size()), &mapped,
                                      static_cast<utf8proc_option_t>(options));
  std::unique_ptr<utf8proc_uint8_t, decltype(&std::free)> owner(mapped, &std::free);
  if (len < 0) throw Error(std::string("cannot normalise text: ") + utf8proc_errmsg(len));

  std::vector<char32_t> out;
  out.reserve(static_cast<std::size_t>(len));
  bool pending_space = false;
  for (utf8proc_ssize_t i = 0; i < len;) {
    utf8proc_int32_t cp = 0;
    i += utf8proc_iterate(mapped + i, len - i, &cp);
    char32_t c = static_cast<char32_t>(cp);
    if (is_whitespace(c)) {
      pending_space = !out.empty();
      continue;
    }
    if (is_control(c)) continue;
    if (pending_space) out.push_back(U' ');
    pending_space = false;
    out.push_back(c);
  }
  return out;
}

const char* tokenizer_kind_name(TokenizerKind kind) {
  return kind == TokenizerKind::wordpiece ? "wordpiece" : "character";
}

std::vector<char32_t> Tokenizer::prepare(std::string_view text) const {
  if (!wordpiece_) return normalize(text, norm_);
  return utf8_decode(validate_utf8(text, norm_.replace_invalid));
}

std::string Tokenizer::token(std::int32_t id) const {
  if (!wordpiece_) return vocab_.token(id);
  if (id < 0 || id >= wordpiece_->size()) return "[?]";
  return wordpiece_->tokens()[static_cast<std::size_t>(id)];
}

std::vector<std::int32_t> Tokenizer::ids(const std::vector<char32_t>& chars) const {
  if (wordpiece_) return wordpiece_->encode(chars);
  std::vector<std::int32_t> out;
  out.reserve(chars.size());
  for (char32_t c : chars) out.push_back(vocab_.id(c));
  return out;
}


}  // namespace zibert
