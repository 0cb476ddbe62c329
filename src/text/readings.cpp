#include "zibert/text/readings.hpp"

#include <utf8proc.h>

#include <algorithm>

#include "zibert/base/compressed.hpp"
#include "zibert/base/error.hpp"
#include "zibert/base/line_source.hpp"
#include "zibert/base/utf8.hpp"

namespace zibert {
namespace {

// The fields of a Unihan_Readings.txt line: "U+4F5B<TAB>kXHC1983<TAB>0337.060:fó 0337.061:fú".
std::vector<std::string_view> split_on(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  std::size_t start = 0;
  for (std::size_t i = 0; i <= s.size(); ++i)
    if (i == s.size() || s[i] == sep) {
      if (i > start) out.push_back(s.substr(start, i - start));
      start = i + 1;
    }
  return out;
}

// "U+4F5B" → U+4F5B; 0 when it is not a code point in that form.
char32_t unihan_code_point(std::string_view field) {
  if (field.size() < 6 || field.size() > 8 || field.substr(0, 2) != "U+") return 0;
  char32_t c = 0;
  for (char h : field.substr(2)) {
    const int v = h >= '0' && h <= '9' ? h - '0' : h >= 'A' && h <= 'F' ? h - 'A' + 10 : -1;
    if (v < 0) return 0;
    c = c * 16 + static_cast<char32_t>(v);
  }
  return c <= 0x10FFFF ? c : 0;
}

}  // namespace

std::string toneless_syllable(std::string_view pinyin) {
  std::vector<char32_t> cps;
  try {
    cps = utf8_decode(pinyin);
  } catch (const Utf8Error&) {
    return "";
  }
  while (!cps.empty() && cps.back() >= U'1' && cps.back() <= U'5') cps.pop_back();  // qiang2
  // ü is stored as "ü": from u with a diaeresis, or from v, as keyboards type it (no syllable has a v).
  std::string out;
  for (char32_t c : cps) {
    utf8proc_int32_t parts[4];
    int options = 0;
    const utf8proc_ssize_t n =
        utf8proc_decompose_char(static_cast<utf8proc_int32_t>(c), parts, 4, UTF8PROC_DECOMPOSE, &options);
    if (n < 1 || n > 4) return "";
    for (utf8proc_ssize_t i = 0; i < n; ++i) {
      char32_t p = static_cast<char32_t>(parts[i]);
      if (p == 0x0308 && !out.empty() && out.back() == 'u') {
        out.back() = 'v';
        continue;
      }
      if (p >= 0x0300 && p <= 0x036F) continue;  // a tone mark (or ê's circumflex)
      if (p >= U'A' && p <= U'Z') p += 32;
      if (p < U'a' || p > U'z') return "";
      out.push_back(static_cast<char>(p));
    }
  }
  const std::size_t v = out.find('v');
  return v == std::string::npos ? out : out.replace(v, 1, "\u00FC");
}

std::vector<std::string> near_syllables(const std::string& s) {
  std::vector<std::string> out;
  auto starts = [&](const char* p) { return s.rfind(p, 0) == 0; };
  auto ends = [&](const std::string& p) { return s.size() >= p.size() && s.compare(s.size() - p.size(), p.size(), p) == 0; };
  // Initials: a retroflex one and its flat twin, n and l, f and h.
  static const std::pair<const char*, const char*> kInitials[] = {{"zh", "z"}, {"ch", "c"}, {"sh", "s"},
                                                                  {"n", "l"}, {"l", "n"}, {"f", "h"}, {"h", "f"}};
  for (const auto& [from, to] : kInitials)
    if (starts(from)) {
      out.push_back(to + s.substr(std::string(from).size()));
      break;
    }
  if (out.empty())
    for (const char* flat : {"z", "c", "s"})
      if (starts(flat)) out.push_back(std::string(flat) + "h" + s.substr(1));
  // Finals: a front nasal and its back twin.
  for (const char* v : {"an", "en", "in"}) {
    if (ends(std::string(v) + "g")) out.push_back(s.substr(0, s.size() - 1));
    else if (ends(v)) out.push_back(s + "g");
  }
  return out;
}

Readings Readings::load(const std::string& path) { return parse(read_file_decompressed(path), path); }

Readings Readings::parse(std::string text, const std::string& name) {
  Readings r;
  LineSource src = LineSource::from_bytes(std::move(text), name);
  std::string line;
  std::int64_t n = 0;
  while (src.next(line)) {
    ++n;
    if (line.empty() || line[0] == '#') continue;
    const std::vector<std::string_view> f = split_on(line, '\t');
    if (f.size() != 3) throw error_at(name, n, "expected three tab-separated fields: U+code, field, value");
    const bool mandarin = f[1] == "kMandarin";
    if (!mandarin && f[1] != "kHanyuPinyin" && f[1] != "kXHC1983") continue;
    const char32_t c = unihan_code_point(f[0]);
    if (c == 0) throw error_at(name, n, "\"" + std::string(f[0]) + "\" is not a code point written U+hex");
    for (std::string_view entry : split_on(f[2], ' ')) {
      // kMandarin: the readings themselves; the others: "where:reading,reading".
      if (!mandarin) {
        const std::size_t colon = entry.rfind(':');
        if (colon == std::string_view::npos)
          throw error_at(name, n, "\"" + std::string(entry) + "\" has no ':' before its readings");
        entry = entry.substr(colon + 1);
      }
      for (std::string_view reading : split_on(entry, ',')) {
        const std::string syllable = toneless_syllable(reading);
        if (syllable.empty()) throw error_at(name, n, "\"" + std::string(reading) + "\" is not a pinyin reading");
        r.add(c, syllable, f[1] == "kHanyuPinyin" ? Use::any : Use::today);
      }
    }
  }
  if (r.any_.by_char.empty()) throw Error(name + ": no readings (kMandarin, kHanyuPinyin or kXHC1983) in it");
  return r;
}

void Readings::Lists::add(char32_t c, const std::string& syllable) {
  std::vector<std::string>& mine = by_char[c];
  if (std::find(mine.begin(), mine.end(), syllable) != mine.end()) return;
  mine.push_back(syllable);
  std::vector<char32_t>& chars = by_syllable[syllable];
  chars.insert(std::lower_bound(chars.begin(), chars.end(), c), c);
}

void Readings::add(char32_t c, const std::string& syllable, Use use) {
  any_.add(c, syllable);
  if (use == Use::today) today_.add(c, syllable);
}

const std::vector<std::string>& Readings::syllables(char32_t c, Use use) const {
  static const std::vector<std::string> kNone;
  const auto& m = (use == Use::any ? any_ : today_).by_char;
  auto it = m.find(c);
  return it == m.end() ? kNone : it->second;
}

const std::vector<char32_t>& Readings::characters(const std::string& syllable, Use use) const {
  static const std::vector<char32_t> kNone;
  const auto& m = (use == Use::any ? any_ : today_).by_syllable;
  auto it = m.find(syllable);
  return it == m.end() ? kNone : it->second;
}

bool Readings::homophones(char32_t a, char32_t b) const {
  if (a == b) return true;
  const std::vector<std::string>& sb = syllables(b);
  for (const std::string& s : syllables(a))
    if (std::find(sb.begin(), sb.end(), s) != sb.end()) return true;
  return false;
}

}  // namespace zibert
