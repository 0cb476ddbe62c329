#include "zibert/text/wordpiece.hpp"

#include <utf8proc.h>

#include <cstdlib>
#include <memory>

#include "zibert/base/error.hpp"
#include "zibert/base/utf8.hpp"

namespace zibert {
namespace {

utf8proc_category_t category(char32_t c) { return utf8proc_category(static_cast<utf8proc_int32_t>(c)); }

// Unicode's White_Space property (what Rust's char::is_whitespace tests).
bool is_white_space(char32_t c) {
  return (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

// BertNormalizer's whitespace: tab, newline, carriage return and White_Space.
bool is_bert_whitespace(char32_t c) { return c == U'\t' || c == U'\n' || c == U'\r' || is_white_space(c); }

// BertNormalizer's control characters: control, format and private-use
// characters (Cc, Cf, Co: what the tokenizers library's "other" test covers;
// unassigned code points stay) but tab, newline and carriage return, which
// count as whitespace.
bool is_bert_control(char32_t c) {
  if (c == U'\t' || c == U'\n' || c == U'\r') return false;
  switch (category(c)) {
    case UTF8PROC_CATEGORY_CC:
    case UTF8PROC_CATEGORY_CF:
    case UTF8PROC_CATEGORY_CO: return true;
    default: return false;
  }
}

// The CJK ideographs BertNormalizer spaces out: the unified ideographs,
// extensions A to E and the compatibility ideographs (not kana, not Hangul),
// with the ranges as the tokenizers library has them.
bool is_chinese_char(char32_t c) {
  return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x20000 && c <= 0x2A6DF) ||
         (c >= 0x2A700 && c <= 0x2B73F) || (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B920 && c <= 0x2CEAF) ||
         (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

// BertPreTokenizer's punctuation: every ASCII character that is not a letter,
// a digit or a space ($ + < = > ^ ` | ~ included), and Unicode's P* categories.
bool is_bert_punctuation(char32_t c) {
  if ((c >= 33 && c <= 47) || (c >= 58 && c <= 64) || (c >= 91 && c <= 96) || (c >= 123 && c <= 126)) return true;
  switch (category(c)) {
    case UTF8PROC_CATEGORY_PC:
    case UTF8PROC_CATEGORY_PD:
    case UTF8PROC_CATEGORY_PS:
    case UTF8PROC_CATEGORY_PE:
    case UTF8PROC_CATEGORY_PI:
    case UTF8PROC_CATEGORY_PF:
    case UTF8PROC_CATEGORY_PO: return true;
    default: return false;
  }
}

// Canonical decomposition (NFD) with the nonspacing marks (Mn) left out.
std::u32string strip_accents(const std::u32string& text) {
  std::string utf8;
  for (char32_t c : text) utf8 += utf8_encode(c);
  utf8proc_uint8_t* mapped = nullptr;
  const utf8proc_ssize_t len =
      utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(utf8.data()), static_cast<utf8proc_ssize_t>(utf8.size()),
                   &mapped, static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_DECOMPOSE));
  std::unique_ptr<utf8proc_uint8_t, decltype(&std::free)> owner(mapped, &std::free);
  if (len < 0) throw Error(std::string("cannot decompose text: ") + utf8proc_errmsg(len));
  std::u32string out;
  for (utf8proc_ssize_t i = 0; i < len;) {
    utf8proc_int32_t cp = 0;
    i += utf8proc_iterate(mapped + i, len - i, &cp);
    if (utf8proc_category(cp) != UTF8PROC_CATEGORY_MN) out.push_back(static_cast<char32_t>(cp));
  }
  return out;
}

// Unicode's full lower-case mapping, character by character (no context):
// the simple mapping, but for İ, whose full mapping is i and a combining dot.
void append_lowercase(char32_t c, std::u32string& out) {
  if (c == 0x130) {
    out += U"i\u0307";
    return;
  }
  out.push_back(static_cast<char32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(c))));
}

}  // namespace

nlohmann::json wordpiece_to_json(const WordPieceOptions& o) {
  return {{"kind", "wordpiece"},
          {"clean_text", o.clean_text},
          {"handle_chinese_chars", o.handle_chinese_chars},
          {"strip_accents", o.strip_accents ? nlohmann::json(*o.strip_accents) : nlohmann::json(nullptr)},
          {"lowercase", o.lowercase},
          {"max_input_chars_per_word", o.max_input_chars_per_word}};
}

WordPieceOptions wordpiece_from_json(const nlohmann::json& j) {
  try {
    if (j.at("kind") != "wordpiece") throw Error("tokenizer kind " + j.at("kind").dump() + " is not wordpiece");
    WordPieceOptions o;
    o.clean_text = j.at("clean_text").get<bool>();
    o.handle_chinese_chars = j.at("handle_chinese_chars").get<bool>();
    if (!j.at("strip_accents").is_null()) o.strip_accents = j.at("strip_accents").get<bool>();
    o.lowercase = j.at("lowercase").get<bool>();
    o.max_input_chars_per_word = j.at("max_input_chars_per_word").get<std::int64_t>();
    if (o.max_input_chars_per_word < 1) throw Error("max_input_chars_per_word must be at least 1");
    return o;
  } catch (const nlohmann::json::exception& e) {
    throw Error(std::string("tokenizer: ") + e.what());
  }
}

WordPiece::WordPiece(std::vector<std::string> tokens, WordPieceOptions options)
    : tokens_(std::move(tokens)), options_(options) {
  if (tokens_.empty()) throw Error("the vocabulary is empty");
  if (tokens_.size() > static_cast<std::size_t>(INT32_MAX)) throw Error("the vocabulary has too many tokens");
  index_.reserve(tokens_.size());
  for (std::size_t i = 0; i < tokens_.size(); ++i) {
    if (tokens_[i].empty()) throw Error("token " + std::to_string(i) + " is empty");
    auto [it, fresh] = index_.emplace(tokens_[i], static_cast<std::int32_t>(i));
    if (!fresh)
      throw Error("token " + std::to_string(i) + " \"" + tokens_[i] + "\" repeats token " + std::to_string(it->second));
  }
  auto need = [&](const char* name) {
    const std::int32_t found = id(name);
    if (found < 0) throw Error(std::string("the vocabulary has no ") + name);
    const std::vector<char32_t> cps = utf8_decode(name);
    special_forms_.emplace_back(std::u32string(cps.begin(), cps.end()), found);
    return found;
  };
  specials_.pad = need("[PAD]");
  if (specials_.pad != 0)
    throw Error("[PAD] is token " + std::to_string(specials_.pad) + "; zibert needs it to be token 0");
  specials_.unk = need("[UNK]");
  specials_.cls = need("[CLS]");
  specials_.sep = need("[SEP]");
  specials_.mask = need("[MASK]");
  specials_.first_regular = 0;
}

std::int32_t WordPiece::id(std::string_view token) const {
  auto it = index_.find(std::string(token));
  return it == index_.end() ? -1 : it->second;
}

std::vector<std::int32_t> WordPiece::encode(std::string_view utf8) const { return encode(utf8_decode(utf8)); }

// Special tokens first, on the text as written (leftmost, longest); the
// text between them is normalised, split and cut into pieces.
std::vector<std::int32_t> WordPiece::encode(const std::vector<char32_t>& text) const {
  std::vector<std::int32_t> out;
  std::u32string pending;
  for (std::size_t i = 0; i < text.size();) {
    std::size_t best_len = 0;
    std::int32_t best_id = -1;
    for (const auto& [form, form_id] : special_forms_)
      if (form.size() > best_len && i + form.size() <= text.size() &&
          std::equal(form.begin(), form.end(), text.begin() + static_cast<std::ptrdiff_t>(i))) {
        best_len = form.size();
        best_id = form_id;
      }
    if (best_len == 0) {
      pending.push_back(text[i++]);
      continue;
    }
    normalize_and_split(pending, out);
    pending.clear();
    out.push_back(best_id);
    i += best_len;
  }
  normalize_and_split(pending, out);
  return out;
}

void WordPiece::normalize_and_split(const std::u32string& text, std::vector<std::int32_t>& out) const {
  if (text.empty()) return;
  // BertNormalizer: clean, space out CJK ideographs, strip accents, lower-case.
  std::u32string s;
  s.reserve(text.size());
  for (char32_t c : text) {
    if (options_.clean_text) {
      if (c == 0 || c == 0xFFFD || is_bert_control(c)) continue;
      if (is_bert_whitespace(c)) c = U' ';
    }
    if (options_.handle_chinese_chars && is_chinese_char(c)) {
      s += U' ';
      s += c;
      s += U' ';
    } else {
      s += c;
    }
  }
  if (options_.strips_accents()) s = strip_accents(s);
  if (options_.lowercase) {
    std::u32string lower;
    lower.reserve(s.size());
    for (char32_t c : s) append_lowercase(c, lower);
    s = std::move(lower);
  }
  // BertPreTokenizer: whitespace separates words and is dropped; each
  // punctuation character is a word of its own.
  std::u32string word;
  for (char32_t c : s) {
    if (is_white_space(c) || is_bert_punctuation(c)) {
      word_pieces(word, out);
      word.clear();
      if (!is_white_space(c)) word_pieces(std::u32string(1, c), out);
      continue;
    }
    word += c;
  }
  word_pieces(word, out);
}

// Greedy longest-match-first: the longest prefix in the vocabulary, then the
// longest "##" continuation from where it ended, and so on; a word with a
// part no token matches, or longer than max_input_chars_per_word, is [UNK].
void WordPiece::word_pieces(const std::u32string& word, std::vector<std::int32_t>& out) const {
  if (word.empty()) return;
  if (static_cast<std::int64_t>(word.size()) > options_.max_input_chars_per_word) {
    out.push_back(specials_.unk);
    return;
  }
  // The word's UTF-8 once, and where each character starts in it.
  std::string utf8;
  std::vector<std::size_t> at;
  at.reserve(word.size() + 1);
  for (char32_t c : word) {
    at.push_back(utf8.size());
    utf8 += utf8_encode(c);
  }
  at.push_back(utf8.size());
  const std::size_t first = out.size();
  std::string piece;
  for (std::size_t start = 0; start < word.size();) {
    std::int32_t found = -1;
    std::size_t end = word.size();
    for (; end > start; --end) {
      piece.assign(start > 0 ? "##" : "");
      piece.append(utf8, at[start], at[end] - at[start]);
      if (auto it = index_.find(piece); it != index_.end()) {
        found = it->second;
        break;
      }
    }
    if (found < 0) {
      out.resize(first);
      out.push_back(specials_.unk);
      return;
    }
    out.push_back(found);
    start = end;
  }
}

}  // namespace zibert
