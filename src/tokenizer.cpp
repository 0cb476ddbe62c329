#include "zibert/tokenizer.hpp"

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

// Decodes UTF-8, checking every sequence (overlong forms and surrogates too).
std::string validated_utf8(std::string_view text, bool replace) {
  std::string out;
  out.reserve(text.size());
  const auto* p = reinterpret_cast<const utf8proc_uint8_t*>(text.data());
  utf8proc_ssize_t n = static_cast<utf8proc_ssize_t>(text.size());
  utf8proc_ssize_t i = 0;
  while (i < n) {
    if (p[i] < 0x80) {  // ASCII fast path
      out += static_cast<char>(p[i++]);
      continue;
    }
    utf8proc_int32_t cp = 0;
    utf8proc_ssize_t len = utf8proc_iterate(p + i, n - i, &cp);
    if (len < 0 || cp < 0) {
      if (!replace) throw Utf8Error(i, "invalid UTF-8 at byte " + std::to_string(i));
      out += "\xEF\xBF\xBD";  // U+FFFD
      ++i;
      continue;
    }
    out.append(text.data() + i, static_cast<std::size_t>(len));
    i += len;
  }
  return out;
}

}  // namespace

std::vector<char32_t> utf8_decode(std::string_view text) {
  std::string valid = validated_utf8(text, false);
  std::vector<char32_t> out;
  out.reserve(valid.size());
  const auto* p = reinterpret_cast<const utf8proc_uint8_t*>(valid.data());
  const utf8proc_ssize_t n = static_cast<utf8proc_ssize_t>(valid.size());
  for (utf8proc_ssize_t i = 0; i < n;) {
    utf8proc_int32_t cp = 0;
    i += utf8proc_iterate(p + i, n - i, &cp);
    out.push_back(static_cast<char32_t>(cp));
  }
  return out;
}

std::int64_t invalid_utf8_offset(std::string_view text) {
  try {
    validated_utf8(text, false);
  } catch (const Utf8Error& e) {
    return e.byte;
  }
  return -1;
}

std::vector<char32_t> normalize(std::string_view text, const Normalization& norm) {
  std::string valid = validated_utf8(text, norm.replace_invalid);
  int options = UTF8PROC_STABLE | UTF8PROC_COMPOSE | UTF8PROC_COMPAT;
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

std::vector<std::int32_t> Tokenizer::ids(const std::vector<char32_t>& chars) const {
  std::vector<std::int32_t> out;
  out.reserve(chars.size());
  for (char32_t c : chars) out.push_back(vocab_.id(c));
  return out;
}

std::vector<std::int32_t> Tokenizer::encode(std::string_view text) const { return ids(normalize(text, norm_)); }

}  // namespace zibert
