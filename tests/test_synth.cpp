// zibert synth: positives, hard negatives, splits without leaks, determinism.
#include <catch2/catch.hpp>
#include <set>

#include "helpers.hpp"
#include "zibert/base/error.hpp"
#include "zibert/text/dataset.hpp"
#include "zibert/text/synth.hpp"
#include "zibert/text/tokenizer.hpp"

using namespace zibert;
using namespace zibert::test;

namespace {

SynthOptions options() {
  SynthOptions o;
  o.phrase = "佛跳墙";
  o.variants = {"佛跳牆", "佛跳墻"};
  o.near_misses = {"狗急跳墙", "仿佛", "哈佛", "佛跳过墙"};
  o.dish_forms = {"一锅{}", "{}年菜"};
  o.seed = 3;
  o.copies = 3;
  return o;
}

// Base sentences built to provoke accidents: many end in 佛 or start with 墙,
// so inserting 跳墙 or 佛跳 next to them would form the phrase.
std::vector<BaseSentence> base_sentences() {
  std::vector<BaseSentence> base;
  const char* seeds[] = {"他们在寺里念佛", "墙上挂着一幅画", "今天的天气很好", "这本书讲的是历史", "佛", "墙",
                         "我们明天去公园散步", "老师说话很慢", "跳舞的人很多", "一坛好酒"};
  for (int i = 0; i < 400; ++i)
    base.push_back({std::string(seeds[i % 10]) + std::to_string(i), i % 2 ? "traditional" : "simplified"});
  base.push_back({"他们点了一坛佛跳墙", "simplified"});  // already a mention: not usable as a base
  return base;
}

const std::vector<std::string> kAll{"佛跳墙", "佛跳牆", "佛跳墻"};

}  // namespace

TEST_CASE("synth labels are right and no negative mentions the phrase", "[synth]") {
  SynthCorpus c = synthesize(base_sentences(), options());
  CHECK(c.skipped["already mentions the phrase"] == 1);
  std::map<std::string, int> kinds;
  for (const auto* split : {&c.train, &c.dev, &c.test})
    for (const SynthExample& ex : *split) {
      INFO(ex.text << " " << ex.category);
      ++kinds[ex.category.substr(0, ex.category.find('/'))];
      CHECK(mentions(ex.text, kAll) == (ex.label == "1"));
      CHECK((ex.category.ends_with("/simplified") || ex.category.ends_with("/traditional")));
      if (ex.category.starts_with("neg-scattered")) {
        std::vector<char32_t> t = utf8_decode(ex.text);
        CHECK(std::count(t.begin(), t.end(), U'跳') >= 1);
      }
    }
  for (const char* k : {"pos-start", "pos-middle", "pos-end", "pos-quoted", "pos-spaced", "pos-dish", "neg-permutation",
                        "neg-partial", "neg-substituted", "neg-scattered", "neg-near-miss", "neg-plain"}) {
    INFO(k);
    CHECK(kinds[k] > 10);
  }
}

TEST_CASE("synth --separator: spaced forms use the extra separators, and no negative forms the phrase through them",
          "[synth]") {
  SynthOptions o = options();
  o.separators = {"-", "_", "／", "\u200B"};
  SynthCorpus c = synthesize(base_sentences(), o);
  std::set<char32_t> seen;
  for (const auto* split : {&c.train, &c.dev, &c.test})
    for (const SynthExample& ex : *split) {
      INFO(ex.text << " " << ex.category);
      CHECK(mentions(ex.text, kAll, o.separators) == (ex.label == "1"));
      if (!ex.category.starts_with("pos-spaced")) continue;
      for (char32_t ch : utf8_decode(ex.text))
        if (ch == U'-' || ch == U'_' || ch == U'\uFF0F' || ch == U'\u200B') seen.insert(ch);
    }
  CHECK(seen.size() == 4);  // every extra separator was used
  CHECK(mentions("佛-跳-墙", kAll, {"-"}));
  CHECK_FALSE(mentions("佛-跳-墙", kAll));
  for (const std::string bad : {"ab", "-a", "1", "", "----"}) {
    o.separators = {bad};
    CHECK_THROWS_AS(synthesize(base_sentences(), o), Error);
  }
  // Runs of several characters: each is put whole between the characters.
  o.separators = {"--", " . "};
  SynthCorpus runs = synthesize(base_sentences(), o);
  std::set<std::string> forms;
  for (const SynthExample& ex : runs.train) {
    CHECK(mentions(ex.text, kAll, o.separators) == (ex.label == "1"));
    for (const std::string form : {"佛--跳--墙", "佛 . 跳 . 墙"})
      if (ex.text.find(form) != std::string::npos) forms.insert(form);
  }
  CHECK(forms.size() == 2);
}

TEST_CASE("synth splits base sentences before inserting: no base sentence in two splits", "[synth]") {
  SynthCorpus c = synthesize(base_sentences(), options());
  // Every base sentence ends in its unique number; find which split each went to.
  auto number = [](const std::string& text) {
    std::string digits;
    for (char ch : text)
      if (ch >= '0' && ch <= '9') digits += ch;
    return digits;
  };
  std::map<std::string, std::set<int>> where;
  int split_id = 0;
  for (const auto* split : {&c.train, &c.dev, &c.test}) {
    for (const SynthExample& ex : *split) where[number(ex.text)].insert(split_id);
    ++split_id;
  }
  CHECK(where.size() == 400);
  for (const auto& [n, splits] : where) CHECK(splits.size() == 1);
  CHECK(c.dev.size() == 40 * 3);
  CHECK(c.test.size() == 40 * 3);
}

TEST_CASE("synth is seeded and deterministic", "[synth]") {
  SynthCorpus a = synthesize(base_sentences(), options()), b = synthesize(base_sentences(), options());
  SynthOptions other = options();
  other.seed = 4;
  SynthCorpus d = synthesize(base_sentences(), other);
  REQUIRE(a.train.size() == b.train.size());
  for (std::size_t i = 0; i < a.train.size(); ++i) CHECK(a.train[i].text == b.train[i].text);
  bool differs = a.train.size() != d.train.size();
  for (std::size_t i = 0; !differs && i < a.train.size(); ++i) differs = a.train[i].text != d.train[i].text;
  CHECK(differs);
}

TEST_CASE("mentions() sees through spaces and middle dots and quotes", "[synth]") {
  CHECK(mentions("一锅佛 跳 墙", kAll));
  CHECK(mentions("佛·跳·牆", kAll));
  CHECK(mentions("「佛跳墻」", kAll));
  CHECK_FALSE(mentions("佛跳过墙", kAll));
  CHECK_FALSE(mentions("狗急跳墙", kAll));
}

TEST_CASE("zibert synth writes train dev and test TSV with a category column", "[synth][cli]") {
  std::string dir = temp_dir();
  std::string corpus;
  for (int i = 0; i < 50; ++i) corpus += "这是第" + std::to_string(i) + "个句子，内容很普通。\n";
  write_text(dir + "/base.txt", corpus);
  RunResult r = run_zibert("synth --phrase 佛跳墙 --variant 佛跳牆 --near-miss 狗急跳墙,仿佛 --corpus " + dir +
                           "/base.txt --out " + dir + "/gen --seed 2");
  INFO(r.err);
  REQUIRE(r.status == 0);
  CHECK(r.out.empty());
  std::string train = read_text(dir + "/gen/train.tsv");
  CHECK(train.starts_with("label\ttext\tcategory\n"));
  CHECK(read_text(dir + "/gen/dev.tsv").starts_with("label\ttext\tcategory\n"));
  CHECK(read_text(dir + "/gen/test.tsv").starts_with("label\ttext\tcategory\n"));
  RunResult again = run_zibert("synth --phrase 佛跳墙 --variant 佛跳牆 --near-miss 狗急跳墙,仿佛 --corpus " + dir +
                               "/base.txt --out " + dir + "/gen2 --seed 2");
  CHECK(read_text(dir + "/gen2/train.tsv") == train);
  RunResult bad = run_zibert("synth --phrase 佛跳墙 --near-miss 一锅佛跳墙 --corpus " + dir + "/base.txt --out " + dir + "/g3");
  CHECK(bad.status == 2);
  CHECK_THAT(bad.err, Catch::Contains("contains the phrase itself"));
  SECTION("progress reading the corpus: on a terminal, or with --progress; never otherwise") {
    RunResult quiet = run_zibert("synth --phrase 佛跳墙 --corpus " + dir + "/base.txt --out " + dir + "/g4");
    CHECK_THAT(quiet.err, !Catch::Contains("lines"));
    RunResult forced = run_zibert("synth --progress --phrase 佛跳墙 --corpus " + dir + "/base.txt --out " + dir + "/g5");
    CHECK_THAT(forced.err, Catch::Contains(dir + "/base.txt: ") && Catch::Contains("50 lines") &&
                               Catch::Contains(", done\n"));
    RunResult tty = run_shell("script -qec '" + std::string(ZIBERT_BIN) + " synth --phrase 佛跳墙 --corpus " + dir +
                              "/base.txt --out " + dir + "/g6' /dev/null");
    // A terminal gets the line rewritten in place (none for a file read this fast), never plain lines.
    CHECK(tty.status == 0);
    CHECK_THAT(tty.out, !Catch::Contains(", done"));
    CHECK(read_text(dir + "/g5/train.tsv") == read_text(dir + "/g4/train.tsv"));
  }
}

TEST_CASE("the hand-written detector checks: 20 mentions and 20 hard near-misses per phrase", "[synth][detect]") {
  // tests/data/detect/*.tsv: sentences written for this project (not copied),
  // which scripts/detect-train --check and bench/bench-detect score.
  const std::pair<const char*, std::vector<std::string>> sets[] = {
      {"xiaolongbao", {"小笼包", "小籠包"}},
      {"mapo_doufu", {"麻婆豆腐"}},
      {"beijing_kaoya", {"北京烤鸭", "北京烤鴨"}},
  };
  for (const auto& [name, phrases] : sets) {
    const Dataset data = read_dataset(std::string(ZIBERT_TEST_DATA) + "/detect/" + name + ".tsv");
    INFO(name);
    REQUIRE(data.rows.size() == 40);
    int mentions_seen = 0;
    std::set<std::string> texts;
    for (const Example& ex : data.rows) {
      INFO(ex.text);
      const bool mention = ex.label == "1";
      CHECK(ex.category == (mention ? "mention" : "near-miss"));
      CHECK(mentions(ex.text, phrases) == mention);
      mentions_seen += mention;
      texts.insert(ex.text);
    }
    CHECK(mentions_seen == 20);
    CHECK(texts.size() == 40);  // no sentence twice
  }
}
