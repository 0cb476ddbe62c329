// Variants: characters a model has no row for read as a variant it
// has (仏 as 佛): the vocabulary's folding, the table reader, the model file's
// "variants" metadata and its checks, `zibert variants`, train --init keeping
// them and --extend-vocab dropping the ones that get rows, data/build-variants.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "helpers.hpp"
#include "zibert/base/error.hpp"
#include "zibert/base/utf8.hpp"
#include "zibert/model/model_file.hpp"
#include "zibert/model/safetensors.hpp"
#include "zibert/text/variants.hpp"

using namespace zibert;
using namespace zibert::test;

namespace {

VariantTable table_of(const std::string& text) {
  LineSource in = LineSource::from_bytes(text, "t.tsv");
  return read_variant_table(in);
}

// tiny_classifier's vocabulary has 佛, 跳, 墙 but not 仏, 牆 or 龍.
const char* kTable = "# a comment\n仏\t佛\n\n牆\t墻墙\n是\t昰\n龍\t龙\n";

}  // namespace

TEST_CASE("a vocabulary reads a variant as its character's row, and refuses a pair that does not fit", "[variants]") {
  Vocab v({U'佛', U'跳', U'墙'});
  CHECK(v.id(U'仏') == kUnk);
  v.set_variants({{U'仏', U'佛'}});
  CHECK(v.id(U'仏') == v.id(U'佛'));
  CHECK(v.id(U'佛') == kNumSpecial);
  CHECK_FALSE(v.has_row(U'仏'));
  CHECK(v.id(U'龍') == kUnk);
  CHECK(v.size() == kNumSpecial + 3);  // no row added
  CHECK_THROWS_WITH(v.set_variants({{U'跳', U'佛'}}), Catch::Contains("跳 has a row of its own"));
  CHECK_THROWS_WITH(v.set_variants({{U'龍', U'龙'}}), Catch::Contains("龙 is not in the vocabulary"));
  CHECK(v.id(U'仏') == v.id(U'佛'));  // a refused set leaves the old variants
  v.set_variants({});
  CHECK(v.id(U'仏') == kUnk);
  CHECK_THROWS_WITH(Vocab({U'佛', U'佛'}), Catch::Contains("the character U+4F5B twice"));
}

TEST_CASE("read_variant_table and resolve_variants: the first candidate with a row, bad lines named", "[variants]") {
  const VariantTable table = table_of(kTable);
  REQUIRE(table.size() == 4);
  CHECK(table[1].first == U'牆');
  CHECK(table[1].second == std::vector<char32_t>{U'墻', U'墙'});
  const Model m = tiny_classifier();
  const std::map<char32_t, char32_t> got = resolve_variants(m.tokenizer.vocab(), table);
  // 墻 has no row, so 牆 takes its second candidate; 是 has a row; 龙 is not in the vocabulary.
  CHECK(got == std::map<char32_t, char32_t>{{U'仏', U'佛'}, {U'牆', U'墙'}});

  const std::pair<const char*, const char*> bad[] = {
      {"仏佛\n", "t.tsv:1: expected a character, a tab and its variants"},
      {"仏\t佛\n仏仏\t佛\n", "t.tsv:2: the first field is not one character"},
      {"仏\t\n", "t.tsv:1: no variant after the tab"},
      {"仏\t佛\t墙\n", "t.tsv:1: more than two fields"},
      {"仏\t仏\n", "t.tsv:1: the character is listed as its own variant"},
      {"仏\t佛\n# x\n仏\t墙\n", "t.tsv:3: 仏 is listed twice"},
      {"\xEF\xA4\x80\t豈\n", "t.tsv:1: \xEF\xA4\x80 (U+F900) is not as the tokenizer normalises it"},
      {"仏\t \n", "is not as the tokenizer normalises it"},
      {"仏\t\xE4\xBD\n", "t.tsv:1: "},
  };
  for (const auto& [text, message] : bad) {
    INFO(text);
    CHECK_THROWS_WITH(table_of(text), Catch::Contains(message));
  }
}

TEST_CASE("a model file keeps its variants, writes none when it has none, and refuses bad ones",
          "[variants][model_file]") {
  const std::string dir = temp_dir();
  Model model = tiny_classifier();
  save_model(dir + "/plain.safetensors", model);
  const std::string plain = read_text(dir + "/plain.safetensors");
  CHECK(decode_safetensors(plain, "p").metadata.count("variants") == 0);
  Vocab v = model.tokenizer.vocab();
  v.set_variants({{U'仏', U'佛'}, {U'牆', U'墙'}});
  model.tokenizer = Tokenizer(v, model.tokenizer.normalization());
  save_model(dir + "/v.safetensors", model);
  const Model back = load_model(dir + "/v.safetensors");
  CHECK(back.tokenizer.vocab().variants() == v.variants());
  CHECK(back.tokenizer.encode("仏跳牆") == back.tokenizer.encode("佛跳墙"));

  const std::pair<const char*, const char*> bad[] = {
      {R"(["仏", "佛"])", "is not an object of characters"},
      {R"({"仏": 1})", "the variant of \"仏\" is not a string"},
      {R"({"仏佛": "佛"})", "\"仏佛\" is not one character"},
      {R"({"仏": ""})", "\"\" is not one character"},
      {R"({"跳": "佛"})", "跳 has a row of its own"},
      {R"({"仏": "龙"})", "龙 is not in the vocabulary"},
      {R"({"仏": {"a": "佛"}})", "the variant of \"仏\" is not a string"},
      {R"("仏")", "is not an object of characters"},
      {R"({"仏": "佛",})", "is not JSON"},
  };
  for (const auto& [json, message] : bad) {
    write_with_metadata(dir + "/v.safetensors", dir + "/bad.safetensors", "variants", json);
    RunResult r = run_zibert("classify -m " + dir + "/bad.safetensors " ZIBERT_SOURCE_DIR "/data/demo.txt");
    INFO(json << ": " << r.err);
    CHECK(r.status == 2);
    CHECK_THAT(r.err, Catch::Contains(dir + "/bad.safetensors: not a usable zibert model: metadata \"variants\"") &&
                          Catch::Contains(message));
  }
  // A key written twice: the last pair counts, as in any JSON document.
  write_with_metadata(dir + "/v.safetensors", dir + "/twice.safetensors", "variants", R"({"仏": "龙", "仏": "佛"})");
  CHECK(load_model(dir + "/twice.safetensors").tokenizer.vocab().variants() == std::map<char32_t, char32_t>{{U'仏', U'佛'}});
}

TEST_CASE("zibert variants attaches a table's variants, says how many, and --clear removes them", "[variants][cli]") {
  const std::string dir = temp_dir();
  save_model(dir + "/m.safetensors", tiny_classifier());
  write_text(dir + "/table.tsv", kTable);
  write_text(dir + "/texts.txt", "他们点了一坛仏跳牆\n他们点了一坛佛跳墙\n");
  RunResult r = run_zibert("variants -m " + dir + "/m.safetensors --table " + dir + "/table.tsv --out " + dir +
                           "/v.safetensors");
  INFO(r.err);
  REQUIRE(r.status == 0);
  CHECK_THAT(r.err, Catch::Contains("2 characters without a row read as a variant's (仏 as 佛, 牆 as 墙)") &&
                        Catch::Contains("of the table's 4 entries, 1 have rows of their own and 1 no variant"));
  CHECK_THAT(run_zibert("info -m " + dir + "/v.safetensors").out, Catch::Contains("variants    2 characters"));
  CHECK(nlohmann::json::parse(run_zibert("info --json -m " + dir + "/v.safetensors").out)["variants"] == 2);
  // The variant reads exactly as the character it stands for; before, as [UNK].
  const auto probs = [&](const std::string& m) {
    std::vector<std::string> out;
    for (const std::string& l : lines_of(run_zibert("classify --raw-probs --no-text -m " + dir + "/" + m + " " +
                                                    dir + "/texts.txt").out))
      out.push_back(l);
    return out;
  };
  const std::vector<std::string> with = probs("v.safetensors"), without = probs("m.safetensors");
  REQUIRE(with.size() == 2);
  CHECK(with[0] == with[1]);
  CHECK(with[1] == without[1]);  // texts with rows of their own read as before
  // The weights are the model's: only the metadata differs.
  const std::string a_bytes = read_text(dir + "/m.safetensors"), b_bytes = read_text(dir + "/v.safetensors");
  const SafeTensors a = decode_safetensors(a_bytes, "m"), b = decode_safetensors(b_bytes, "v");
  REQUIRE(a.tensors.size() == b.tensors.size());
  for (const auto& [name, t] : a.tensors) {
    const SafeTensor& u = b.tensors.at(name);
    CHECK(std::string(t.bytes, t.count * 4) == std::string(u.bytes, u.count * 4));
  }
  CHECK(b.metadata.count("variants") == 1);

  r = run_zibert("variants -m " + dir + "/v.safetensors --clear --out " + dir + "/c.safetensors");
  REQUIRE(r.status == 0);
  CHECK_THAT(r.err, Catch::Contains("2 variants removed"));
  CHECK(read_text(dir + "/c.safetensors") == read_text(dir + "/m.safetensors"));

  // Errors: nothing to attach, or attaching and --clear; --readings without
  // --sound-alike; a bad table line, with nothing written.
  for (const std::string& args : {std::string(""), " --clear --table " + dir + "/table.tsv", std::string(" --clear --sound-alike")}) {
    r = run_zibert("variants -m " + dir + "/m.safetensors --out " + dir + "/x.safetensors" + args);
    CHECK(r.status == 2);
    CHECK_THAT(r.err, Catch::Contains("give --table FILE or --sound-alike (attach variants) or --clear (remove them)"));
  }
  r = run_zibert("variants -m " + dir + "/m.safetensors --table " + dir + "/table.tsv --readings " + dir +
                 "/table.tsv --out " + dir + "/x.safetensors");
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::Contains("--readings is read by --sound-alike"));
  write_text(dir + "/bad.tsv", "仏\t佛\n牆墙\n");
  r = run_zibert("variants -m " + dir + "/m.safetensors --table " + dir + "/bad.tsv --out " + dir + "/x.safetensors");
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::Contains(dir + "/bad.tsv:2: expected a character, a tab and its variants"));
  CHECK(run_shell("test -e " + dir + "/x.safetensors").status != 0);
}

TEST_CASE("train --init keeps the model's variants, and --extend-vocab drops the ones that get rows", "[variants][cli]") {
  const std::string dir = temp_dir();
  write_text(dir + "/a.tsv", "text\tlabel\n甲乙丙\t1\n丙乙甲\t0\n甲乙丙丙\t1\n乙甲丙\t0\n");
  write_text(dir + "/dev.tsv", "text\tlabel\n甲乙丙\t1\n丙甲乙\t0\n");
  // 丁 is new to the first model and seen four times: --extend-vocab gives it a row.
  write_text(dir + "/b.tsv", "text\tlabel\n甲乙丁\t1\n丁乙甲\t0\n甲乙丁丁\t1\n乙甲戊\t0\n");
  write_text(dir + "/table.tsv", "丁\t丙\n戊\t甲\n");
  const std::string dev = " --dev " + dir + "/dev.tsv --epochs 1 --threads 1 -q";
  REQUIRE(run_zibert("train --data " + dir + "/a.tsv --out " + dir + "/a.safetensors --dim 16 --heads 2 --ffn 32 "
                     "--max-len 16" + dev).status == 0);
  REQUIRE(run_zibert("variants -q -m " + dir + "/a.safetensors --table " + dir + "/table.tsv --out " + dir +
                     "/a.safetensors").status == 0);
  const auto variants = [&](const std::string& m) {
    return nlohmann::json::parse(run_zibert("info --json -m " + dir + "/" + m).out)["variants"].get<int>();
  };
  CHECK(variants("a.safetensors") == 2);
  RunResult r = run_zibert("train --init " + dir + "/a.safetensors --data " + dir + "/b.tsv --out " + dir +
                           "/kept.safetensors" + dev);
  INFO(r.err);
  REQUIRE(r.status == 0);
  CHECK(variants("kept.safetensors") == 2);
  // Its training characters all read as rows: 丁 and 戊 through their variants.
  CHECK(nlohmann::json::parse(run_zibert("info --json -m " + dir + "/kept.safetensors").out)["training"]
            ["train_unknown_characters"] == 0);
  r = run_zibert("train --init " + dir + "/a.safetensors --data " + dir + "/b.tsv --out " + dir +
                 "/ext.safetensors --extend-vocab --min-count 2" + dev);
  REQUIRE(r.status == 0);
  CHECK(variants("ext.safetensors") == 1);  // 丁 got a row; 戊 (seen once) still reads as 甲
  const Model ext = load_model(dir + "/ext.safetensors");
  CHECK(ext.tokenizer.vocab().has_row(U'丁'));
  CHECK(ext.tokenizer.vocab().variants() == std::map<char32_t, char32_t>{{U'戊', U'甲'}});
}

TEST_CASE("data/build-variants writes opencc's variants, 仏 as 佛 among them", "[variants][recipe]") {
  if (run_shell("command -v opencc").status != 0) {
    WARN("opencc is not installed: data/build-variants needs it (data/build-base-corpus installs it)");
    RunResult r = run_shell(ZIBERT_SOURCE_DIR "/data/build-variants " + temp_dir() + "/v.tsv");
    CHECK(r.status == 2);
    CHECK_THAT(r.err, Catch::Contains("needs opencc"));
    return;
  }
  const std::string out = temp_dir() + "/v.tsv";
  RunResult r = run_shell(ZIBERT_SOURCE_DIR "/data/build-variants " + out);
  INFO(r.err);
  REQUIRE(r.status == 0);
  const std::string text = read_text(out);
  const VariantTable table = table_of(text);  // the reader takes it
  CHECK(table.size() > 5000);
  CHECK_THAT(text, Catch::Contains("\n仏\t佛") && Catch::Contains("\n売\t賣卖"));
  // On the shipped detector, 売 has no row and reads as 賣, the first of its
  // variants with one (仏 has a row: its typos are trained as 佛's homophone).
  const Model m = load_model(ZIBERT_SOURCE_DIR "/models/fotiaoqiang.safetensors");
  CHECK_FALSE(m.tokenizer.vocab().has_row(U'売'));
  CHECK(resolve_variants(m.tokenizer.vocab(), table).at(U'売') == U'賣');
}
