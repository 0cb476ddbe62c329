#include "zibert/base/utf8.hpp"

#include <cstdio>

#include <utf8proc.h>

namespace zibert {

std::string validate_utf8(std::string_view text, bool replace) {
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

std::vector<char32_t> utf8_decode(std::string_view text) {
  std::string valid = validate_utf8(text, false);
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
    validate_utf8(text, false);
  } catch (const Utf8Error& e) {
    return e.byte;
  }
  return -1;
}

std::string code_point_name(char32_t cp) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "U+%04X", static_cast<unsigned>(cp));
  return buf;
}

std::string utf8_encode(char32_t cp) {
  std::string out;
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
  return out;
}

std::string utf8_encode(const std::vector<char32_t>& cps) {
  std::string out;
  out.reserve(cps.size() * 3);
  for (char32_t cp : cps) out += utf8_encode(cp);
  return out;
}

}  // namespace zibert
