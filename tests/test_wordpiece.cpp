// BERT's WordPiece tokenizer (text/wordpiece): hand-written cases for each
// step, parity with Hugging Face's tokenizers library on generated lines
// (tests/data/wordpiece_parity.json, written by bench/bench-tokenizer-parity),
// the model file and the tokenize command.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>

#include "helpers.hpp"
#include "zibert/model/model_file.hpp"
#include "zibert/text/tokenizer.hpp"
#include "zibert/text/wordpiece.hpp"

using namespace zibert;

namespace {

// bert-base-chinese's layout in small: [PAD], unused rows, then [UNK] [CLS] [SEP] [MASK] at 5..8.
WordPiece small_wordpiece(WordPieceOptions options = {}) {
  std::vector<std::string> tokens = {"[PAD]", "[unused1]", "[unused2]", "[unused3]", "[unused4]", "[UNK]", "[CLS]",
                                     "[SEP]", "[MASK]"};
  for (const char* t : {"佛", "跳", "墙", "。", ",", "!", "$", "+", "un", "##believ", "##able", "play", "##ing",
                        "cafe", "café", "i", "##̇", "the", "a", "##b", "1", "##2", "こ", "##ん", "ん", "#", "##a"})
    tokens.push_back(t);
  return WordPiece(tokens, options);
}

std::vector<std::string> pieces(const WordPiece& wp, const std::string& text) {
  std::vector<std::string> out;
  for (std::int32_t id : wp.encode(text)) out.push_back(wp.tokens()[static_cast<std::size_t>(id)]);
  return out;
}

using Pieces = std::vector<std::string>;

}  // namespace

TEST_CASE("WordPiece: each step of BertNormalizer, BertPreTokenizer and WordPiece", "[wordpiece]") {
  const WordPiece wp = small_wordpiece();
  CHECK(pieces(wp, "佛跳墙。") == Pieces{"佛", "跳", "墙", "。"});                   // CJK spaced out, punctuation split
  CHECK(pieces(wp, "unbelievable playing") == Pieces{"un", "##believ", "##able", "play", "##ing"});
  CHECK(pieces(wp, "UNBELIEVABLE") == Pieces{"un", "##believ", "##able"});         // lower-cased
  CHECK(pieces(wp, "Café") == Pieces{"cafe"});                                     // accents stripped with lowercase
  CHECK(pieces(wp, "$+a") == Pieces{"$", "+", "a"});                               // every ASCII non-alphanumeric
  CHECK(pieces(wp, "ab") == Pieces{"a", "##b"});
  CHECK(pieces(wp, "abx the") == Pieces{"[UNK]", "the"});                          // one piece missing: the word is [UNK]
  CHECK(pieces(wp, "12") == Pieces{"1", "##2"});
  CHECK(pieces(wp, "佛\t跳\r\n墙\u3000!") == Pieces{"佛", "跳", "墙", "!"});         // whitespace of every kind
  CHECK(pieces(wp, "佛\u0007跳\u200b墙\ufffd") == Pieces{"佛", "跳", "墙"});           // control, format, U+FFFD dropped
  CHECK(pieces(wp, "こん") == Pieces{"こ", "##ん"});                                 // kana is not spaced out
  CHECK(pieces(wp, std::string(100, 'a')) != Pieces{"[UNK]"});
  CHECK(pieces(wp, std::string(101, 'a')) == Pieces{"[UNK]"});                     // over 100 characters
  CHECK(pieces(wp, "佛跳[MASK]。") == Pieces{"佛", "跳", "[MASK]", "。"});           // specials before normalising
  CHECK(pieces(wp, "[mask]") == Pieces{"[UNK]", "[UNK]", "[UNK]"});                // only as written: [ mask ]
  CHECK(pieces(wp, "a[SEP][CLS]b") == Pieces{"a", "[SEP]", "[CLS]", "[UNK]"});
  CHECK(pieces(wp, "\u0130") == Pieces{"i"});  // İ: NFD's dot stripped first, then I lower-cased
  CHECK(pieces(wp, "").empty());
  CHECK(pieces(wp, " \t ").empty());

  WordPieceOptions cased;
  cased.lowercase = false;
  CHECK(pieces(small_wordpiece(cased), "Café café") == Pieces{"[UNK]", "café"});  // neither lowered nor stripped
  WordPieceOptions accents;
  accents.strip_accents = false;
  CHECK(pieces(small_wordpiece(accents), "Café") == Pieces{"café"});
  CHECK(pieces(small_wordpiece(accents), "\u0130") == Pieces{"i", "##\u0307"});  // İ's full lower case: i, a dot
  WordPieceOptions whole;
  whole.handle_chinese_chars = false;
  CHECK(pieces(small_wordpiece(whole), "佛跳墙") == Pieces{"[UNK]"});  // one word now, and no ##跳 in the vocabulary
  CHECK(small_wordpiece().specials().cls == 6);
  CHECK(small_wordpiece().specials().mask == 8);
  CHECK(small_wordpiece().specials().first_regular == 0);
}

TEST_CASE("WordPiece refuses a vocabulary it cannot use, naming what is wrong", "[wordpiece]") {
  const std::vector<std::string> base = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "佛"};
  auto error_of = [](std::vector<std::string> tokens) {
    try {
      WordPiece wp(std::move(tokens), {});
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  std::vector<std::string> dup = base;
  dup.push_back("佛");
  CHECK(error_of(dup) == "token 6 \"佛\" repeats token 5");
  std::vector<std::string> empty = base;
  empty.insert(empty.begin() + 5, "");
  CHECK(error_of(empty) == "token 5 is empty");
  CHECK(error_of({"[UNK]", "[PAD]", "[CLS]", "[SEP]", "[MASK]"}) == "[PAD] is token 1; zibert needs it to be token 0");
  CHECK(error_of({"[PAD]", "[UNK]", "[CLS]", "[SEP]"}) == "the vocabulary has no [MASK]");
  CHECK(error_of({}) == "the vocabulary is empty");
  CHECK(error_of(base) == "no error");
}

TEST_CASE("WordPiece gives Hugging Face's tokenizers' ids on thousands of generated lines", "[wordpiece]") {
  const char* path_env = std::getenv("ZIBERT_WORDPIECE_FIXTURE");  // bench/bench-tokenizer-parity's larger runs
  const std::string path = path_env ? path_env : std::string(ZIBERT_TEST_DATA) + "/wordpiece_parity.json";
  std::ifstream in(path);
  REQUIRE(in.good());
  const nlohmann::json fixture = nlohmann::json::parse(in);
  const auto vocab = fixture.at("vocab").get<std::vector<std::string>>();
  const auto lines = fixture.at("lines").get<std::vector<std::string>>();
  REQUIRE(lines.size() >= 1000);
  std::size_t compared = 0, differ = 0;
  for (const nlohmann::json& config : fixture.at("configs")) {
    const nlohmann::json& o = config.at("options");
    WordPieceOptions options;
    options.lowercase = o.at("lowercase");
    options.handle_chinese_chars = o.at("handle_chinese_chars");
    options.clean_text = o.at("clean_text");
    if (!o.at("strip_accents").is_null()) options.strip_accents = o.at("strip_accents").get<bool>();
    const WordPiece wp(vocab, options);
    const auto want = config.at("ids").get<std::vector<std::vector<std::int32_t>>>();
    REQUIRE(want.size() == lines.size());
    for (std::size_t i = 0; i < lines.size(); ++i) {
      std::vector<std::int32_t> got = {wp.specials().cls};
      for (std::int32_t id : wp.encode(lines[i])) got.push_back(id);
      got.push_back(wp.specials().sep);
      ++compared;
      if (got != want[i] && ++differ <= 3) {
        INFO(config.at("name").get<std::string>() << " line " << i + 1 << ": " << nlohmann::json(lines[i]).dump());
        CHECK(got == want[i]);
      }
    }
  }
  INFO(differ << " of " << compared << " lines differ");
  CHECK(differ == 0);
}

TEST_CASE("a WordPiece model file keeps its tokenizer, and tokenize shows what the model reads", "[wordpiece]") {
  Model model = test::tiny_encoder();
  WordPieceOptions options;
  options.strip_accents = false;
  const WordPiece wp = small_wordpiece(options);
  model.config.vocab_size = wp.size();
  model.net = Bert<float>(model.config);
  model.net.init_weights(3);
  model.tokenizer = Tokenizer(wp);
  const std::string dir = test::temp_dir();
  save_model(dir + "/wp.safetensors", model);
  const Model back = load_model(dir + "/wp.safetensors");
  REQUIRE(back.tokenizer.kind() == TokenizerKind::wordpiece);
  CHECK(back.tokenizer.wordpiece()->tokens() == wp.tokens());
  CHECK(back.tokenizer.wordpiece()->options().strip_accents == std::optional<bool>(false));
  CHECK(back.tokenizer.encode("Café 佛跳[MASK]") == wp.encode("Café 佛跳[MASK]"));

  const test::RunResult info = test::run_zibert("info -m " + dir + "/wp.safetensors");
  CHECK(info.out.find("vocab       36 tokens, BERT's WordPiece (lower-cased, accents kept, CJK characters split)\n") !=
        std::string::npos);
  const nlohmann::json j = nlohmann::json::parse(test::run_zibert("info --json -m " + dir + "/wp.safetensors").out);
  CHECK(j.at("tokenizer") == "wordpiece");
  CHECK(j.at("wordpiece").at("strip_accents") == false);
  CHECK(nlohmann::json::parse(test::run_zibert("info --json -m fotiaoqiang").out).at("tokenizer") == "character");

  test::write_text(dir + "/in.txt", "Unbelievable佛跳墙!\n\nab\n");
  const test::RunResult r = test::run_zibert("tokenize -m " + dir + "/wp.safetensors " + dir + "/in.txt");
  CHECK(r.status == 0);
  CHECK(r.out == "[CLS] un ##believ ##able 佛 跳 墙 ! [SEP]\n[CLS] [SEP]\n[CLS] a ##b [SEP]\n");
  const test::RunResult ids = test::run_zibert("tokenize --ids -m " + dir + "/wp.safetensors " + dir + "/in.txt");
  CHECK(ids.out == "6 17 18 19 9 10 11 14 7\n6 7\n6 27 28 7\n");
  // zibert's own models: one token per character after NFKC, the space token written ␠.
  test::write_text(dir + "/chars.txt", "佛跳牆，ＡＢ c\n");
  const test::RunResult chars = test::run_zibert("tokenize -m fotiaoqiang " + dir + "/chars.txt");
  CHECK(chars.status == 0);
  CHECK(chars.out == "[CLS] 佛 跳 牆 , A B ␠ c [SEP]\n");
  test::write_text(dir + "/bad.txt", "ok\n\xff\n");
  const test::RunResult bad = test::run_shell(std::string(ZIBERT_BIN) + " tokenize -m " + dir + "/wp.safetensors - < " + dir + "/bad.txt");
  CHECK(bad.status == 2);
  CHECK(bad.out == "[CLS] [UNK] [SEP]\n");
  CHECK(bad.err == "zibert: error: -:2:1: invalid UTF-8 (--invalid replace carries on)\n");
}
