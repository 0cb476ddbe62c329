// Tokenizer (DESIGN §4): NFKC, case folding, whitespace, invalid UTF-8, vocab.
#include <catch2/catch.hpp>

#include "zibert/text/tokenizer.hpp"

using namespace zibert;

namespace {
std::string norm(const std::string& text, bool lowercase = false) {
  return utf8_encode(normalize(text, Normalization{lowercase, false}));
}
}  // namespace

TEST_CASE("normalisation table", "[tokenizer]") {
  struct Case {
    const char* what;
    std::string input, expected;
  };
  auto c = GENERATE(values<Case>({
      {"simplified CJK", "他们点了一坛佛跳墙", "他们点了一坛佛跳墙"},
      {"traditional CJK stays traditional", "佛跳牆與佛跳墻", "佛跳牆與佛跳墻"},
      {"full-width Latin", "\xEF\xBC\xA1\xEF\xBC\xA2\xEF\xBD\x83", "ABc"},
      {"full-width digits", "\xEF\xBC\x91\xEF\xBC\x92\xEF\xBC\x93元", "123元"},
      {"full-width punctuation", "好！", "好!"},
      {"emoji", "\xF0\x9F\x8D\xB2好吃", "\xF0\x9F\x8D\xB2好吃"},
      {"combining mark composes", "caf\x65\xCC\x81", "caf\xC3\xA9"},
      {"CRLF is whitespace", "第一行\r\n第二行", "第一行 第二行"},
      {"tab becomes a space", "佛\t跳", "佛 跳"},
      {"runs of spaces become one", "佛   跳 \t  墙", "佛 跳 墙"},
      {"ideographic space", "佛\xE3\x80\x80跳", "佛 跳"},
      {"leading and trailing whitespace dropped", "  \t佛跳墙 \r", "佛跳墙"},
      {"control characters removed", "佛\x01跳\x7F墙", "佛跳墙"},
      {"zero-width space, joiners and word joiner dropped",
       "佛\u200B跳\u200C墙 佛\u200D跳\u2060墙", "佛跳墙 佛跳墙"},
      {"soft hyphen, a BOM inside the text and bidi marks dropped", "佛\u00AD跳\uFEFF墙\u200E\u202B!", "佛跳墙!"},
      {"variation selectors dropped", "墙\uFE00\u845B\U000E0100", "墙\u845B"},
      {"a zero-width space between spaces leaves one space", "佛 \u200B 跳", "佛 跳"},
      {"empty string", "", ""},
      {"only whitespace", " \t\r\n ", ""},
      {"ligature expands", "\xEF\xAC\x81", "fi"},
  }));
  INFO(c.what);
  CHECK(norm(c.input) == c.expected);
}

TEST_CASE("case folding is optional", "[tokenizer]") {
  CHECK(norm("Fo TIAO Qiang") == "Fo TIAO Qiang");
  CHECK(norm("Fo TIAO Qiang", true) == "fo tiao qiang");
  CHECK(norm("\xEF\xBC\xA1", true) == "a");  // full-width A → A → a
}

TEST_CASE("invalid UTF-8 is an error naming the byte offset", "[tokenizer]") {
  struct Case {
    const char* what;
    std::string input;
    std::int64_t byte;
  };
  auto c = GENERATE(values<Case>({
      {"lone continuation byte", "ab\x80", 2},
      {"0xFF", "\xFF", 0},
      {"truncated sequence at the end", "佛\xE8\xB7", 3},
      {"overlong encoding", "\xC0\xAF", 0},
      {"UTF-16 surrogate", "a\xED\xA0\x80", 1},
      {"code point above U+10FFFF", "\xF4\x90\x80\x80", 0},
  }));
  INFO(c.what);
  try {
    normalize(c.input, Normalization{});
    FAIL("no error");
  } catch (const Utf8Error& e) {
    CHECK(e.byte == c.byte);
    CHECK(std::string(e.what()) == "invalid UTF-8 at byte " + std::to_string(c.byte));
  }
  CHECK(invalid_utf8_offset(c.input) == c.byte);
  // --invalid replace: bad bytes become U+FFFD and the text goes on.
  std::vector<char32_t> replaced = normalize(c.input, Normalization{false, true});
  CHECK(std::find(replaced.begin(), replaced.end(), U'\uFFFD') != replaced.end());
}

TEST_CASE("vocabulary: frequency order and ties by code point and min-count", "[tokenizer][vocab]") {
  VocabBuilder b;
  b.add(normalize("佛跳墙佛跳佛 b a", Normalization{}));
  Vocab v = b.build(1);
  // 佛×3, 跳×2, ' '×2, then墙/a/b once each by code point: ' ' (U+20) before 跳 (U+8DF3)
  REQUIRE(v.size() == kNumSpecial + 6);
  CHECK(v.token(5) == "佛");
  CHECK(v.token(6) == " ");
  CHECK(v.token(7) == "跳");
  CHECK(v.token(8) == "a");
  CHECK(v.token(9) == "b");
  CHECK(v.token(10) == "墙");
  CHECK(b.build(2).size() == kNumSpecial + 3);
  CHECK(v.id(U'牆') == kUnk);

  Tokenizer tok(v, Normalization{});
  CHECK(tok.encode("佛跳牆") == std::vector<std::int32_t>{5, 7, kUnk});

  SECTION("tokens round-trip through the model file's list") {
    Vocab back = Vocab::from_tokens(v.tokens());
    CHECK(back.tokens() == v.tokens());
    CHECK(v.tokens()[0] == "[PAD]");
    CHECK(v.tokens()[2] == "[CLS]");
  }
  SECTION("a damaged list is an error") {
    std::vector<std::string> tokens = v.tokens();
    tokens.push_back("佛");
    CHECK_THROWS_WITH(Vocab::from_tokens(tokens), Catch::Contains("twice"));
    tokens = v.tokens();
    tokens[5] = "佛跳";
    CHECK_THROWS_WITH(Vocab::from_tokens(tokens), Catch::Contains("not a single character"));
    tokens = v.tokens();
    tokens[1] = "[MASK]";
    CHECK_THROWS_WITH(Vocab::from_tokens(tokens), Catch::Contains("should be [UNK]"));
  }
}
