// Readings and homophones on a small readings table in Unihan_Readings.txt's
// format (readings_fixture.hpp); synth's forms made of them: test_synth_sound.cpp.
#include <bzlib.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <set>

#include "helpers.hpp"
#include "readings_fixture.hpp"
#include "zibert/base/compressed.hpp"
#include "zibert/base/error.hpp"
#include "zibert/base/utf8.hpp"
#include "zibert/text/dataset.hpp"
#include "zibert/text/readings.hpp"
#include "zibert/text/sound_alike.hpp"
#include "zibert/text/synth.hpp"
#include "zibert/text/tokenizer.hpp"
#include "zibert/text/variants.hpp"

using namespace zibert;
using namespace zibert::test;

namespace {

std::string bzip2(const std::string& bytes) {
  std::string out(bytes.size() * 2 + 600, '\0');
  unsigned len = static_cast<unsigned>(out.size());
  REQUIRE(BZ2_bzBuffToBuffCompress(out.data(), &len, const_cast<char*>(bytes.data()),
                                   static_cast<unsigned>(bytes.size()), 9, 0, 0) == BZ_OK);
  out.resize(len);
  return out;
}

}  // namespace

TEST_CASE("pinyin syllables lose their tones", "[sound]") {
  CHECK(toneless_syllable("fó") == "fo");
  CHECK(toneless_syllable("lǜ") == "lü");
  CHECK(toneless_syllable("lv") == "lü");  // as keyboards type it
  CHECK(toneless_syllable("Qiang2") == "qiang");
  CHECK(toneless_syllable("ḿ") == "m");
  CHECK(toneless_syllable("ê̄") == "e");
  CHECK(toneless_syllable("qi ang").empty());
  CHECK(toneless_syllable("墙").empty());
  CHECK(toneless_syllable("").empty());
}

TEST_CASE("near syllables: the usual confusions of initials and finals", "[sound]") {
  auto near = [](const std::string& s) {
    auto v = near_syllables(s);
    return std::set<std::string>(v.begin(), v.end());
  };
  CHECK(near("zhang") == std::set<std::string>{"zang", "zhan"});
  CHECK(near("san") == std::set<std::string>{"shan", "sang"});
  CHECK(near("ling") == std::set<std::string>{"ning", "lin"});
  CHECK(near("fu") == std::set<std::string>{"hu"});
  CHECK(near("hen") == std::set<std::string>{"fen", "heng"});
  CHECK(near("qiang") == std::set<std::string>{"qian"});
  CHECK(near("ang") == std::set<std::string>{"an"});
  CHECK(near("tiao").empty());
}

TEST_CASE("the readings table: every reading of kMandarin, kHanyuPinyin and kXHC1983", "[sound]") {
  const Readings r = unihan_lines_table();
  CHECK(r.size() == 11);
  CHECK(r.syllables(U'佛') == std::vector<std::string>{"fo", "fu", "bi", "bo"});
  CHECK(r.syllables(U'强') == std::vector<std::string>{"qiang", "jiang"});
  // Today's readings (kMandarin, kXHC1983) leave out kHanyuPinyin's old ones.
  using Use = Readings::Use;
  CHECK(r.syllables(U'佛', Use::today) == std::vector<std::string>{"fu", "fo"});
  CHECK(r.syllables(U'强', Use::today) == std::vector<std::string>{"qiang"});
  CHECK(r.characters("bi") == std::vector<char32_t>{U'佛'});
  CHECK(r.characters("bi", Use::today).empty());
  CHECK(r.characters("qiang", Use::today) == r.characters("qiang"));
  CHECK(r.characters("qiang") == std::vector<char32_t>{U'墙', U'強', U'强', U'腔', U'蔷'});
  CHECK(r.homophones(U'墙', U'蔷'));  // kXHC1983 alone reads 蔷
  CHECK(r.homophones(U'佛', U'弗'));
  CHECK_FALSE(r.homophones(U'墙', U'钱'));
  CHECK(r.syllables(U'门').empty());

  SECTION("bzip2-compressed as Debian ships it, from a file") {
    const std::string dir = temp_dir();
    write_text(dir + "/readings.txt.bz2", bzip2(kUnihanLines));
    CHECK(Readings::load(dir + "/readings.txt.bz2").characters("qiang") == r.characters("qiang"));
    CHECK(decompress_if_bzip2(bzip2(kUnihanLines) + bzip2("more\n"), "two") == std::string(kUnihanLines) + "more\n");
    std::string cut = bzip2(kUnihanLines);
    cut.resize(cut.size() / 2);
    write_text(dir + "/cut.bz2", cut);
    CHECK_THROWS_WITH(Readings::load(dir + "/cut.bz2"), Catch::Contains(dir + "/cut.bz2: corrupt bzip2 data") &&
                                                             Catch::Contains("ends early"));
    CHECK_THROWS_WITH(Readings::load(dir + "/none.txt"), Catch::Contains(dir + "/none.txt: cannot open it"));
    CHECK_THROWS_WITH(Readings::load(dir), Catch::Contains("is a directory"));
  }
  SECTION("a malformed line is an error naming its line") {
    CHECK_THROWS_WITH(Readings::parse("# x\nU+4F5B\tkMandarin\n", "t.txt"), Catch::StartsWith("t.txt:2: "));
    CHECK_THROWS_WITH(Readings::parse("U+XYZ1\tkMandarin\tfó\n", "t.txt"), Catch::StartsWith("t.txt:1: "));
    CHECK_THROWS_WITH(Readings::parse("U+4F5B\tkXHC1983\tfó\n", "t.txt"), Catch::Contains("t.txt:1: ") &&
                                                                             Catch::Contains("no ':'"));
    CHECK_THROWS_WITH(Readings::parse("U+4F5B\tkMandarin\tf?\n", "t.txt"), Catch::Contains("not a pinyin reading"));
    CHECK_THROWS_WITH(Readings::parse("U+4F5B\tkRSUnicode\t9.5\n", "t.txt"), Catch::Contains("t.txt: no readings"));
  }
}

TEST_CASE("a phrase's sound-alike characters come from the table, toward common ones", "[sound]") {
  const Readings r = unihan_lines_table();
  const std::vector<char32_t> phrase = utf8_decode("佛跳墙");
  std::unordered_map<char32_t, std::int64_t> frequency{{U'强', 100}, {U'蔷', 1}};
  const PhraseSounds every(phrase, {}, r, frequency, {});
  CHECK(every.positions(PhraseSounds::Alike::same) == std::vector<std::size_t>{0, 1, 2});  // 弗, 眺, 強 …
  std::map<char32_t, int> drawn;
  Rng rng(1);
  for (int i = 0; i < 2000; ++i) ++drawn[every.draw(2, PhraseSounds::Alike::same, rng)];
  CHECK(drawn.size() == 4);  // 強 强 腔 蔷, never 墙 itself
  CHECK(drawn.count(U'墙') == 0);
  CHECK(drawn[U'强'] > 1600);  // weights 10.1, 1.1, 0.1 and 0.1
  CHECK(every.draw(2, PhraseSounds::Alike::near, rng) == U'钱');
  CHECK(every.sounds_like(2, U'钱'));
  CHECK(every.sounds_like(2, U'強'));
  CHECK_FALSE(every.sounds_like(2, U'门'));

  // The user's reading: 佛 is drawn as fo only, so 弗 (fu) is never drawn, but
  // it still sounds like 佛 read fu, so no negative may use it; held-out 強 is
  // never drawn either and still a homophone.
  const PhraseSounds told(phrase, {{"fo"}, {"tiao"}, {"qiang"}}, r, frequency, {U'強'});
  CHECK(told.sounds_like(0, U'弗'));
  CHECK(told.positions(PhraseSounds::Alike::same) == std::vector<std::size_t>{1, 2});
  for (int i = 0; i < 500; ++i) CHECK(told.draw(2, PhraseSounds::Alike::same, rng) != U'強');
  CHECK(told.sounds_like(2, U'強'));
  // Both readings given (fo/fu): 弗 is drawn at 佛's place.
  const PhraseSounds both(phrase, {{"fo", "fu"}, {"tiao"}, {"qiang"}}, r, frequency, {});
  CHECK(both.positions(PhraseSounds::Alike::same) == std::vector<std::size_t>{0, 1, 2});
  CHECK(both.draw(0, PhraseSounds::Alike::same, rng) == U'弗');

  // A typo's form inside a text: one character replaced by one that sounds like it.
  CHECK(told.heard_in(utf8_decode("今天吃弗跳墙")));
  CHECK(told.heard_in(utf8_decode("佛跳強")));
  CHECK(told.heard_in(utf8_decode("一锅佛跳钱。")));  // near: qian for qiang
  CHECK_FALSE(told.heard_in(utf8_decode("佛跳墙")));  // the phrase itself is no typo
  CHECK_FALSE(told.heard_in(utf8_decode("弗跳強")));  // two changed
  CHECK_FALSE(told.heard_in(utf8_decode("佛吃墙")));
  CHECK_FALSE(told.heard_in(utf8_decode("佛跳")));
}

TEST_CASE("a phrase's reading: fo/fu, tone marks, initials", "[sound]") {
  const PhraseReading r = PhraseReading::given({"fó/fu", "Tiào", "qiang2"});
  CHECK(r.size() == 3);
  CHECK(r.ways() == std::vector<std::vector<std::string>>{{"fo", "fu"}, {"tiao"}, {"qiang"}});
  std::set<std::string> pieces;
  Rng rng(3);
  for (int i = 0; i < 400; ++i) pieces.insert(r.piece(0, 3, true, rng));
  CHECK(pieces.count("fotiaoqiang"));
  CHECK(pieces.count("fótiàoqiang2"));  // as given, lower-cased
  CHECK(pieces.count("FTQ"));
  CHECK(pieces.count("ftq"));
  CHECK(pieces.size() == kPinyinStyles + 4);
  std::set<std::string> plain;
  for (int i = 0; i < 400; ++i) plain.insert(PhraseReading({"fo", "tiao", "qiang"}).piece(1, 2, false, rng));
  CHECK(plain == std::set<std::string>{"tiaoqiang", "tiao qiang", "Tiaoqiang", "Tiao Qiang", "TIAOQIANG"});
  CHECK_THROWS_WITH(PhraseReading::given({"fo/f?"}), Catch::Contains("\"f?\" is not a pinyin syllable"));
}

TEST_CASE("pinyin spellings as people type them", "[sound]") {
  const std::vector<std::string> s{"fo", "tiao", "qiang"};
  CHECK(pinyin_spelling(s, 0) == "fotiaoqiang");
  CHECK(pinyin_spelling(s, 1) == "fo tiao qiang");
  CHECK(pinyin_spelling(s, 2) == "Fotiaoqiang");
  CHECK(pinyin_spelling(s, 3) == "Fo Tiao Qiang");
  CHECK(pinyin_spelling(s, 4) == "FOTIAOQIANG");
  CHECK(pinyin_spelling({"lü", "cha"}, 0) == "lvcha");
}


TEST_CASE("sound-alikes: a character without a row reads as the earliest one with a row read the same", "[sound]") {
  const Readings r = unihan_lines_table();
  const Vocab vocab({U'跳', U'强', U'墙', U'佛'});  // 强 before 墙: the more common, in a vocabulary built from counts
  const VariantTable sounds = sound_alike_table(vocab, r);
  // 強 蔷 腔 are read qiang, 眺 tiao; 弗 is read fú, which no character with a
  // row has as its first reading (佛's is fó), so it gets none; nor do 钱 and 胡.
  const VariantTable want{{U'強', {U'强'}}, {U'眺', {U'跳'}}, {U'腔', {U'强'}}, {U'蔷', {U'强'}}};
  CHECK(sounds == want);
  Vocab with = vocab;
  with.set_variants(resolve_variants(vocab, sounds));
  CHECK(with.id(U'蔷') == vocab.id(U'强'));
  CHECK(with.id(U'弗') == kUnk);
  // 啌 is read xiāng and qiāng: as 相 it would lose the reading a typo of 墙
  // meant, so it gets none; 箱, read xiāng alone, reads as 相.
  const Readings two = Readings::parse("U+554C\tkHanyuPinyin\t10646.070:xiāng,qiāng\n"
                                       "U+76F8\tkMandarin\txiāng\n"
                                       "U+7BB1\tkMandarin\txiāng\n",
                                       "Unihan_Readings.txt");
  CHECK(sound_alike_table(Vocab({U'相'}), two) == VariantTable{{U'箱', {U'相'}}});
}
