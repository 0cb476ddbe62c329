// synth's sound-alike kinds (homophone and near-homophone typos, pinyin,
// aliases, negatives that never sound alike) on the small readings table of
// readings_fixture.hpp, and the hand-written check sets of the detectors.
#include <algorithm>
#include <catch2/catch.hpp>
#include <set>

#include "helpers.hpp"
#include "readings_fixture.hpp"
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

const std::vector<std::string> kPhrases{"佛跳墙", "佛跳牆", "佛跳墻"};

}  // namespace

namespace {

// The position and character where a window of `text` differs from `phrase`
// in exactly one character, for every such window.
std::vector<std::pair<std::size_t, char32_t>> one_off(const std::vector<char32_t>& t, const std::vector<char32_t>& p) {
  std::vector<std::pair<std::size_t, char32_t>> out;
  for (std::size_t i = 0; i + p.size() <= t.size(); ++i) {
    std::size_t differ = 0, at = 0;
    for (std::size_t j = 0; j < p.size(); ++j)
      if (t[i + j] != p[j]) ++differ, at = j;
    if (differ == 1) out.emplace_back(at, t[i + at]);
  }
  return out;
}

std::vector<std::pair<std::size_t, char32_t>> one_off(const std::string& text, const std::string& phrase) {
  return one_off(utf8_decode(text), utf8_decode(phrase));
}

// The phrase's position that the first such window changes, and (in
// replacement) the character it has there; -1 when no window does.
int changed_position(const std::vector<char32_t>& text, const std::vector<char32_t>& phrase, char32_t& replacement) {
  const auto off = one_off(text, phrase);
  if (off.empty()) return -1;
  replacement = off.front().second;
  return static_cast<int>(off.front().first);
}

}  // namespace

TEST_CASE("synth's sound-alike kinds: homophones, near ones, pinyin, aliases, and negatives that never sound alike",
          "[sound][synth]") {
  const Readings r = unihan_lines_table();
  SynthOptions o;
  o.phrase = "佛跳墙";
  o.variants = {"佛跳牆"};
  o.near_misses = {"狗急跳墙", "jumped over the wall"};
  o.readings = &r;
  o.pinyin = {"fo", "tiao", "qiang"};
  o.aliases = {"福寿全", "Buddha Jumps Over the Wall"};
  o.not_inside = {"丸子"};
  o.held_out = {"腔"};
  o.seed = 5;
  o.copies = 4;
  std::vector<BaseSentence> base;
  const char* seeds[] = {"他们在寺里念佛", "墙上挂着一幅画", "今天的天气很好强", "这本书讲的是历史", "Wall Street 很远",
                         "我们明天去公园散步", "老师说话很慢", "跳舞的人很多", "一坛好酒", "丸子汤很好喝"};
  for (int i = 0; i < 600; ++i) base.push_back({std::string(seeds[i % 10]) + std::to_string(i), ""});
  const SynthCorpus c = synthesize(base, o);
  std::vector<std::string> every_name = kPhrases;
  every_name.insert(every_name.end(), o.aliases.begin(), o.aliases.end());
  const std::vector<char32_t> phrase = utf8_decode("佛跳墙"), variant = utf8_decode("佛跳牆");
  const PhraseSounds sounds(phrase, {{"fo"}, {"tiao"}, {"qiang"}}, r, {}, {});
  std::map<std::string, int> kinds;
  std::set<std::string> alias_cases;
  for (const auto* split : {&c.train, &c.dev, &c.test})
    for (const SynthExample& ex : *split) {
      INFO(ex.text << " " << ex.category);
      ++kinds[ex.category];
      const std::vector<char32_t> t = utf8_decode(ex.text);
      if (ex.label == "0") {
        CHECK_FALSE(mentions(ex.text, every_name, {}, o.not_inside));
        CHECK_FALSE(sounds.heard_in(t));  // no typo's form either (福跳墙 under 佛's reading fu)
      }
      char32_t c32 = 0;
      if (ex.category == "pos-homophone" || ex.category == "pos-near-homophone") {
        int at = changed_position(t, phrase, c32);
        if (at < 0) at = changed_position(t, variant, c32);
        REQUIRE(at >= 0);
        const char32_t original = phrase[static_cast<std::size_t>(at)];
        CHECK(c32 != U'腔');  // held out
        CHECK(c32 != U'弗');  // fú: not the reading given
        if (ex.category == "pos-homophone") CHECK(r.homophones(c32, original));
        else CHECK((c32 == U'钱' && !r.homophones(c32, original)));
      }
      if (ex.category == "neg-substituted") {
        int at = changed_position(t, phrase, c32);
        if (at < 0) at = changed_position(t, variant, c32);
        REQUIRE(at >= 0);
        CHECK_FALSE(sounds.sounds_like(static_cast<std::size_t>(at), c32));
      }
      if (ex.category == "pos-pinyin") {
        bool found = false;
        for (int style = 0; style < kPinyinStyles; ++style)
          found = found || ex.text.find(pinyin_spelling({"fo", "tiao", "qiang"}, style)) != std::string::npos;
        CHECK(found);
      }
      if (ex.category == "pos-alias") {
        CHECK(mentions(ex.text, o.aliases));
        for (const char* form : {"Buddha Jumps Over the Wall", "buddha jumps over the wall", "BUDDHA JUMPS OVER THE WALL",
                                 "Buddha Jumps Over The Wall"})
          if (ex.text.find(form) != std::string::npos) alias_cases.insert(form);
      }
      if (ex.category == "neg-not-inside")
        CHECK((ex.text.find("佛跳墙丸子") != std::string::npos || ex.text.find("丸子佛跳") != std::string::npos ||
               ex.text.find("佛跳牆丸子") != std::string::npos));
      if (ex.category == "neg-partial" && ex.text.find("Over the") != std::string::npos)
        CHECK_FALSE(mentions(ex.text, o.aliases));
      if (ex.category == "neg-partial-pinyin")
        CHECK(ex.text.find("fotiaoqiang") == std::string::npos);
    }
  for (const char* k : {"pos-start", "pos-homophone", "pos-near-homophone", "pos-pinyin", "pos-alias", "neg-substituted",
                        "neg-not-inside", "neg-partial-homophone", "neg-partial-pinyin", "neg-plain"}) {
    INFO(k);
    CHECK(kinds[k] > 0);
  }
  CHECK(alias_cases.size() == 4);
  CHECK(c.notes.empty());
  // The shares: homophones about 12 % of the positives.
  int positives = 0;
  for (const auto& [k, n] : kinds) positives += k.starts_with("pos-") ? n : 0;
  CHECK(kinds["pos-homophone"] > positives * 0.08);
  CHECK(kinds["pos-homophone"] < positives * 0.16);

  // 佛 given two readings (fo/fu): typos at its place too, spelt as the first.
  o.pinyin = {"fo/fu", "tiao", "qiang"};
  std::set<char32_t> first;
  bool spelt = false;
  for (const SynthExample& ex : synthesize(base, o).train) {
    char32_t c32 = 0;
    if (ex.category == "pos-homophone" && changed_position(utf8_decode(ex.text), phrase, c32) == 0) first.insert(c32);
    spelt = spelt || (ex.category == "pos-pinyin" && ex.text.find("futiao") == std::string::npos &&
                      ex.text.find("fotiao") != std::string::npos);
  }
  CHECK(first == std::set<char32_t>{U'弗'});
  CHECK(spelt);

  // Initials only when asked for (--initials): FTQ, ftq.
  auto initials = [&] {
    int n = 0;
    for (const SynthExample& ex : synthesize(base, o).train)
      if (ex.category == "pos-pinyin" && (ex.text.find("FTQ") != std::string::npos ||
                                          ex.text.find("ftq") != std::string::npos))
        ++n;
    return n;
  };
  CHECK(initials() == 0);
  o.pinyin_initials = true;
  CHECK(initials() > 0);
}

TEST_CASE("synth without a readings table or aliases makes the forms it made before", "[sound][synth]") {
  SynthOptions o;
  o.phrase = "佛跳墙";
  o.seed = 9;
  std::vector<BaseSentence> base;
  for (int i = 0; i < 200; ++i) base.push_back({"今天的天气很好" + std::to_string(i), ""});
  const SynthCorpus c = synthesize(base, o);
  for (const auto* split : {&c.train, &c.dev, &c.test})
    for (const SynthExample& ex : *split) {
      INFO(ex.category);
      CHECK((ex.category != "pos-homophone" && ex.category != "pos-pinyin" && ex.category != "pos-alias" &&
             ex.category != "neg-not-inside" && ex.category != "neg-partial-homophone"));
    }
  REQUIRE(c.notes.size() == 1);
  CHECK_THAT(c.notes[0], Catch::Contains("no readings table"));
  // The reading from the table only when each character has one.
  const Readings r = unihan_lines_table();
  o.readings = &r;
  const SynthCorpus d = synthesize(base, o);
  REQUIRE(d.notes.size() == 1);
  CHECK_THAT(d.notes[0], Catch::Contains("pos-pinyin is off: 佛 has 2 readings today"));
  o.pinyin = {"fo", "tiao"};
  CHECK_THROWS_WITH(synthesize(base, o), Catch::Contains("--pinyin gives 2 syllables for the 3 characters"));
}

TEST_CASE("mentions(): aliases in any case, and not next to a --not-inside word", "[sound][synth]") {
  CHECK(mentions("我们吃了 buddha jumps over the wall", {"Buddha Jumps Over the Wall"}));
  CHECK(mentions("红烧肉真香", {"红烧肉"}, {}, {"丸子"}));
  CHECK_FALSE(mentions("红烧肉丸子汤真香", {"红烧肉"}, {}, {"丸子"}));
  CHECK(mentions("红烧肉丸子汤和红烧肉", {"红烧肉"}, {}, {"丸子"}));  // the second one counts
  CHECK_FALSE(mentions("肉丸子红烧肉", {"红烧肉"}, {}, {"肉丸子"}));
}

TEST_CASE("zibert synth --readings, --pinyin, --alias, --not-inside: the kinds and the errors", "[sound][synth][cli]") {
  const std::string dir = temp_dir();
  write_text(dir + "/readings.txt", kUnihanLines);
  std::string corpus;
  for (int i = 0; i < 80; ++i) corpus += "这是第" + std::to_string(i) + "个句子，内容很普通。\n";
  write_text(dir + "/base.txt", corpus);
  const std::string common = "synth --phrase 佛跳墙 --corpus " + dir + "/base.txt --readings " + dir + "/readings.txt ";
  RunResult r = run_zibert(common + "--pinyin 'fo tiao qiang' --alias 'Buddha Jumps Over the Wall' --not-inside 丸子 "
                           "--copies 5 --out " + dir + "/gen");
  INFO(r.err);
  REQUIRE(r.status == 0);
  for (const char* k : {"pos-homophone", "pos-pinyin", "pos-alias", "neg-not-inside"}) CHECK_THAT(r.err, Catch::Contains(k));
  RunResult off = run_zibert(common + "--homophone-share 0 --near-homophone-share 0 --out " + dir + "/gen2");
  CHECK(off.status == 0);
  CHECK_THAT(off.err, !Catch::Contains("pos-homophone") && Catch::Contains("pos-pinyin is off"));
  RunResult missing = run_zibert("synth --phrase 佛跳墙 --corpus " + dir + "/base.txt --readings " + dir +
                                 "/nope.txt --out " + dir + "/gen3");
  CHECK(missing.status == 2);
  CHECK_THAT(missing.err, Catch::Contains(dir + "/nope.txt: cannot open it"));
  RunResult short_reading = run_zibert(common + "--pinyin 'fo tiao' --out " + dir + "/gen4");
  CHECK(short_reading.status == 2);
  CHECK_THAT(short_reading.err, Catch::Contains("2 syllables for the 3 characters"));
  RunResult bad_reading = run_zibert(common + "--pinyin 'fo tiao qi?ng' --out " + dir + "/gen5");
  CHECK(bad_reading.status == 2);
  CHECK_THAT(bad_reading.err, Catch::Contains("\"qi?ng\" is not a pinyin syllable"));
}

TEST_CASE("the hand-written forms check set: 50 sentences per kind, labels that hold", "[sound][detect]") {
  // tests/data/detect/fotiaoqiang_forms.tsv: sentences written for this
  // project; bench/bench-detect --forms scores a detector on it per kind.
  const Dataset data = read_dataset(std::string(ZIBERT_TEST_DATA) + "/detect/fotiaoqiang_forms.tsv");
  std::map<std::string, int> per_kind;
  std::set<std::string> texts;
  const std::vector<std::string> literal{"佛跳墙", "佛跳牆", "佛跳墻"};
  const std::vector<std::string> names{"佛跳墙", "佛跳牆", "佛跳墻", "福寿全", "满坛香", "Buddha Jumps Over the Wall"};
  for (const Example& ex : data.rows) {
    INFO(ex.text << " " << ex.category);
    ++per_kind[ex.category];
    texts.insert(ex.text);
    CHECK(ex.label == (ex.category == "near-miss" ? "0" : "1"));
    CHECK_FALSE(mentions(ex.text, literal));  // none writes the phrase itself
    const bool named = ex.category == "alias" || ex.category == "translation";
    CHECK(mentions(ex.text, names) == named);
  }
  CHECK(per_kind["typo"] + per_kind["typo-held-out"] == 71);
  CHECK(per_kind["typo-held-out"] == 37);  // 蔷 樯 眺 挑 腔: synth --hold-out 蔷樯眺挑腔
  for (const char* kind : {"pinyin", "alias", "translation", "near-miss"}) CHECK(per_kind[kind] == 50);
  CHECK(per_kind["description"] == 20);
  CHECK(per_kind["mixed-english"] == 10);  // half translations (佛跳wall)
  CHECK(per_kind["mixed-pinyin"] == 10);   // and half pinyin (fo跳墙)
  CHECK(per_kind["pinyin-marked"] == 10);  // pinyin with tone marks (fó tiào qiáng)
  CHECK(texts.size() == data.rows.size());
}

TEST_CASE("synth --pinyin with tone marks writes the marked spellings too, and toneless ones still", "[sound][synth]") {
  const Readings r = unihan_lines_table();
  SynthOptions o;
  o.phrase = "佛跳墙";
  o.readings = &r;
  o.pinyin = {"Fó", "tiào", "qiáng"};
  o.seed = 3;
  o.copies = 4;
  std::vector<BaseSentence> base;
  for (int i = 0; i < 600; ++i) base.push_back({"今天的天气很好" + std::to_string(i), ""});
  const SynthCorpus c = synthesize(base, o);
  std::set<std::string> marked;
  int toneless = 0;
  for (const auto* split : {&c.train, &c.dev, &c.test})
    for (const SynthExample& ex : *split) {
      INFO(ex.text << " " << ex.category);
      if (ex.category == "pos-pinyin") {
        bool plain = false;
        for (int style = 0; style < kPinyinStyles; ++style)
          plain = plain || ex.text.find(pinyin_spelling({"fo", "tiao", "qiang"}, style)) != std::string::npos;
        toneless += plain;
        for (const char* form : {"fótiàoqiáng", "fó tiào qiáng"})
          if (ex.text.find(form) != std::string::npos) marked.insert(form);
        CHECK((plain || ex.text.find("fótiàoqiáng") != std::string::npos ||
               ex.text.find("fó tiào qiáng") != std::string::npos));
      }
      if (ex.category == "neg-partial-pinyin") {  // part of the reading, marked or not, never all of it
        CHECK(ex.text.find("fótiàoqiáng") == std::string::npos);
        CHECK(ex.text.find("fó tiào qiáng") == std::string::npos);
      }
    }
  CHECK(marked.size() == 2);
  CHECK(toneless > 0);
  // Tone numbers are no marks to write: the toneless styles only.
  o.pinyin = {"fo2", "tiao4", "qiang2"};
  int numbered = 0;
  for (const SynthExample& ex : synthesize(base, o).train)
    if (ex.category == "pos-pinyin") {
      ++numbered;
      CHECK(ex.text.find("ó") == std::string::npos);
      CHECK(ex.text.find("fo2") == std::string::npos);
    }
  CHECK(numbered > 0);
}

namespace {

std::string lower_ascii(std::string s) {
  for (char& c : s)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return s;
}

}  // namespace

TEST_CASE("the new detectors' check sets: 50 sentences per kind, typos one character off, held-out ones apart",
          "[sound][detect]") {
  struct Set {
    const char* file;
    std::string phrase, held_out, not_inside;
    std::vector<std::string> english;  // one of them in every translation
  };
  for (const Set& set : {Set{"mapo_doufu_forms.tsv", "麻婆豆腐", "痘窦甫斧", "", {"tofu", "bean curd"}},
                         Set{"hongshaorou_forms.tsv", "红烧肉", "蹂韶弘", "丸子", {"pork"}}}) {
    const Dataset data = read_dataset(std::string(ZIBERT_TEST_DATA) + "/detect/" + set.file);
    const std::vector<char32_t> held = utf8_decode(set.held_out);
    std::map<std::string, int> per_kind;
    std::set<std::string> texts;
    std::set<std::pair<std::size_t, char32_t>> typos;  // every (position, character) a typo uses
    for (const Example& ex : data.rows) {
      INFO(set.file << ": " << ex.text << " " << ex.category);
      ++per_kind[ex.category];
      texts.insert(ex.text);
      CHECK(ex.label == (ex.category == "near-miss" ? "0" : "1"));
      // none writes the phrase, but for the other dish 红烧肉丸子汤 (synth --not-inside 丸子)
      const std::vector<std::string> not_inside = set.not_inside.empty() ? std::vector<std::string>{}
                                                                         : std::vector<std::string>{set.not_inside};
      CHECK_FALSE(mentions(ex.text, {set.phrase}, {}, not_inside));
      if (ex.category == "typo" || ex.category == "typo-held-out") {
        const auto off = one_off(ex.text, set.phrase);
        REQUIRE(off.size() == 1);
        const bool is_held = std::find(held.begin(), held.end(), off[0].second) != held.end();
        CHECK(is_held == (ex.category == "typo-held-out"));
        typos.insert(off[0]);
      }
      if (ex.category == "translation") {
        const std::string text = lower_ascii(ex.text);
        CHECK(std::any_of(set.english.begin(), set.english.end(),
                          [&](const std::string& word) { return text.find(word) != std::string::npos; }));
      }
    }
    for (const Example& ex : data.rows)
      if (ex.category == "near-miss")
        for (const auto& off : one_off(ex.text, set.phrase)) {
          INFO(set.file << ": " << ex.text);
          CHECK_FALSE(typos.count(off));  // never a typo the mentions use
        }
    for (const char* kind : {"typo", "pinyin", "translation", "near-miss"}) CHECK(per_kind[kind] == 50);
    CHECK(per_kind["typo-held-out"] == 20);
    CHECK(per_kind.size() == 5);
    CHECK(texts.size() == data.rows.size());
  }
}
