// Training-data readers: TSV (header or not), fastText, JSONL; errors name the line.
#include <catch2/catch.hpp>
#include <cmath>
#include <sstream>

#include "zibert/base/error.hpp"
#include "zibert/model/batch.hpp"
#include "zibert/text/vocab.hpp"
#include "zibert/text/dataset.hpp"

using namespace zibert;

namespace {
Dataset parse(const std::string& text) { return parse_dataset(text, "d.tsv"); }
}  // namespace

TEST_CASE("formats are detected by content", "[dataset]") {
  struct Case {
    const char* what;
    std::string text;
    DataFormat format;
    bool category;
  };
  auto c = GENERATE(values<Case>({
      {"TSV without header", "1\t佛跳墙\n0\t狗急跳墙\n", DataFormat::Tsv, false},
      {"TSV with header", "label\ttext\n1\t佛跳墙\n0\t狗急跳墙\n", DataFormat::Tsv, false},
      {"TSV header in the other order", "text\tlabel\n佛跳墙\t1\n狗急跳墙\t0\n", DataFormat::Tsv, false},
      {"TSV with category column", "label\ttext\tcategory\n1\t佛跳墙\tpos\n0\t狗急跳墙\tnear\n", DataFormat::Tsv, true},
      {"TSV with BOM, CRLF and blank lines", "\xEF\xBB\xBF" "1\t佛跳墙\r\n\r\n0\t狗急跳墙\r\n", DataFormat::Tsv, false},
      {"fastText", "__label__1 佛跳墙\n__label__0 狗急跳墙\n", DataFormat::FastText, false},
      {"JSONL", "{\"text\":\"佛跳墙\",\"label\":1}\n{\"text\":\"狗急跳墙\",\"label\":\"0\"}\n", DataFormat::Jsonl,
       false},
  }));
  INFO(c.what);
  Dataset d = parse(c.text);
  CHECK(d.format == c.format);
  CHECK(d.has_category == c.category);
  REQUIRE(d.rows.size() == 2);
  CHECK(d.rows[0].label == "1");
  CHECK(d.rows[0].text == "佛跳墙");
  CHECK(d.rows[1].label == "0");
  CHECK(d.rows[1].text == "狗急跳墙");
}

TEST_CASE("bad rows are errors naming file and line", "[dataset]") {
  struct Case {
    std::string text, message;
  };
  auto c = GENERATE(values<Case>({
      {"1\t佛跳墙\n0 no tab here\n", "d.tsv:2: expected label<TAB>text"},
      {"1\t佛跳墙\n\t狗急跳墙\n", "d.tsv:2: row has no label (an empty label field means no labels only under --multi-label)"},
      {"1\t佛跳墙\n[]\t狗急跳墙\n", "d.tsv:2: a label written [] in TSV: a row of no labels needs train --multi-label"},
      {"1\t佛跳墙\n0\t  \n", "d.tsv:2: row has no text"},
      {"label\ttext\n1\t佛跳墙\n0\n", "d.tsv:3: expected 2 tab-separated columns"},
      {"__label__1 佛跳墙\n__label__0\n", "d.tsv:2: row has no text"},
      {"__label__1 佛跳墙\n佛\n", "d.tsv:2: expected a __label__ prefix"},
      {"{\"text\":\"佛跳墙\",\"label\":1}\n{\"text\":\"x\"}\n", "d.tsv:2: row has no label"},
      {"{\"text\":\"佛跳墙\",\"label\":1}\n{\"label\":1}\n", "d.tsv:2: row has no text"},
      {"{\"text\":\"佛跳墙\",\"label\":1}\n{broken\n", "d.tsv:2: not valid JSON"},
      {"1\t佛跳墙\n0\t\xFF\xFE\n", "d.tsv:2:3: invalid UTF-8"},
      {"\n\n", "d.tsv: no labelled rows"},
  }));
  CHECK_THROWS_WITH(parse(c.text), Catch::StartsWith(c.message));
}

TEST_CASE("hold-out split is seeded and loses no row", "[dataset]") {
  std::string text;
  for (int i = 0; i < 100; ++i) text += std::to_string(i % 2) + "\t文本" + std::to_string(i) + "\n";
  Dataset a = parse(text), b = parse(text), dev_a, dev_b;
  split_holdout(a, dev_a, 0.1, 5);
  split_holdout(b, dev_b, 0.1, 5);
  CHECK(dev_a.rows.size() == 10);
  CHECK(a.rows.size() == 90);
  for (std::size_t i = 0; i < dev_a.rows.size(); ++i) CHECK(dev_a.rows[i].text == dev_b.rows[i].text);
  // A fraction outside [0, 1), nan among them, is an error, not a count past the rows.
  for (double bad : {std::nan(""), -0.1, 1.0, 2.0}) {
    Dataset c = parse(text), dev_c;
    CHECK_THROWS_AS(split_holdout(c, dev_c, bad, 5), Error);
    CHECK(c.rows.size() == 100);
  }
}

TEST_CASE("length-bucketed batches cover every item once", "[batching]") {
  std::vector<std::int64_t> lengths;
  for (int i = 0; i < 1000; ++i) lengths.push_back(3 + (i * 37) % 60);
  std::uint64_t seed = 9;
  auto batches = bucketed_batches(lengths, 32, &seed);
  std::vector<int> seen(lengths.size(), 0);
  std::int64_t padding = 0, tokens = 0;
  for (const auto& b : batches) {
    CHECK(b.size() <= 32);
    std::int64_t longest = 0;
    for (std::size_t i : b) longest = std::max(longest, lengths[i]);
    for (std::size_t i : b) {
      ++seen[i];
      padding += longest - lengths[i];
      tokens += lengths[i];
    }
  }
  for (int s : seen) CHECK(s == 1);
  CHECK(double(padding) / double(tokens) < 0.05);  // bucketing keeps padding small
  CHECK(bucketed_batches(lengths, 32, &seed) == batches);
}

TEST_CASE("windows cover long texts with overlap", "[batching]") {
  CHECK(window_starts(10, 126) == std::vector<std::int64_t>{0});
  CHECK(window_starts(300, 100) == std::vector<std::int64_t>{0, 50, 100, 150, 200});
  CHECK(window_starts(130, 100) == std::vector<std::int64_t>{0, 30});
  CHECK(with_specials({7, 8, 9}, 4, SpecialIds{}) == std::vector<std::int32_t>{kCls, 7, 8, kSep});
}

TEST_CASE("multi-label data: several __label__ words, a JSON list, a TSV comma list", "[dataset][multi-label]") {
  auto labels_of = [](const std::string& text) {
    Dataset d = parse_dataset(text, "m.txt", /*multi_label=*/true);
    CHECK(d.multi_label);
    std::vector<std::vector<std::string>> out;
    for (const Example& ex : d.rows) {
      CHECK(ex.label.empty());
      out.push_back(ex.labels);
    }
    return out;
  };
  using L = std::vector<std::vector<std::string>>;
  CHECK(labels_of("__label__food __label__price 红烧肉太贵\n__label__drink\t奶茶\n") ==
        L{{"food", "price"}, {"drink"}});
  CHECK(labels_of("{\"text\":\"红烧肉太贵\",\"label\":[\"food\",\"price\"]}\n{\"text\":\"今天\",\"label\":[]}\n"
                  "{\"text\":\"奶茶\",\"label\":\"drink\"}\n{\"text\":\"一\",\"label\":[1,true]}\n") ==
        L{{"food", "price"}, {}, {"drink"}, {"1", "true"}});
  CHECK(labels_of("food, price\t红烧肉太贵\ndrink\t奶茶\n") == L{{"food", "price"}, {"drink"}});
  CHECK(labels_of("label\ttext\nfood,price\t红烧肉太贵\n") == L{{"food", "price"}});
  CHECK(labels_of("food\t红烧肉\n\t今天天气好\n") == L{{"food"}, {}});  // an empty label field: no labels
  SECTION("a label given twice counts once") {
    CHECK(labels_of("__label__a __label__a 一\n") == L{{"a"}});
    CHECK(labels_of("a,a\t一\n") == L{{"a"}});
  }
  SECTION("the fastText text keeps what follows the labels") {
    Dataset d = parse_dataset("__label__a __label__b 红烧肉 __label__c\n", "m.txt", true);
    CHECK(d.rows[0].text == "红烧肉 __label__c");
  }
  SECTION("errors name the line") {
    CHECK_THROWS_WITH(parse_dataset("a,,b\t一\n", "m.tsv", true),
                      Catch::StartsWith("m.tsv:1: an empty label in the row's labels"));
    CHECK_THROWS_WITH(parse_dataset("a\t一\n[]\t二\n", "m.tsv", true),
                      Catch::StartsWith("m.tsv:2: a label written [] in TSV: leave the label field empty"));
    CHECK_THROWS_WITH(parse_dataset("{\"text\":\"一\",\"label\":[\"a\",{}]}\n", "m.jsonl", true),
                      Catch::StartsWith("m.jsonl:1: label must be a string"));
  }
  SECTION("without multi_label those forms are errors that say so, and a TSV comma is part of the label") {
    CHECK_THROWS_WITH(parse("__label__a __label__b 一\n"),
                      Catch::Contains("d.tsv:1:") && Catch::Contains("train --multi-label"));
    CHECK_THROWS_WITH(parse("{\"text\":\"一\",\"label\":[\"a\"]}\n"),
                      Catch::Contains("d.tsv:1:") && Catch::Contains("train --multi-label"));
    CHECK(parse("a,b\t一\n").rows[0].label == "a,b");
  }
}
