// The reading channel: each character's pinyin syllables added to its
// embedding. Its table, its place in the model file, and train --reading-channel.
#include <catch2/catch.hpp>
#include <filesystem>

#include "helpers.hpp"
#include "zibert/infer/predictor.hpp"
#include "zibert/model/hf_export.hpp"
#include "zibert/model/hf_import.hpp"
#include "zibert/model/reading_channel.hpp"

using namespace zibert;
using namespace zibert::test;

namespace {

// 佛 read fo, fu (two rows); 墙 強 蔷 read qiang; 跳 眺 tiao; 弗 fu.
const char* kChannelTable =
    "U+4F5B\tkHanyuPinyin\t10142.070:fó,fú\n"
    "U+5899\tkMandarin\tqiáng\n"
    "U+5F17\tkMandarin\tfú\n"
    "U+5F37\tkMandarin\tqiáng\n"
    "U+773A\tkMandarin\ttiào\n"
    "U+8537\tkXHC1983\t0912.020:qiáng\n"
    "U+8DF3\tkMandarin\ttiào\n";

Readings channel_table() { return Readings::parse(kChannelTable, "Unihan_Readings.txt"); }

// The syllables of token t.
std::vector<std::string> syllables_of(const TokenReadings& r, std::size_t t) {
  std::vector<std::string> out;
  for (std::int32_t row : r.of_token[t]) out.push_back(r.syllables[row]);
  return out;
}

// tiny_classifier with a reading channel for its vocabulary, its rows random.
Model reading_classifier(std::uint64_t seed) {
  Model base = tiny_classifier(seed);
  ModelConfig cfg = base.config;
  cfg.readings = token_readings(base.tokenizer.vocab().tokens(), channel_table());
  Model model{cfg, base.tokenizer, base.classifier, base.training, Bert<float>(cfg), std::nullopt};
  model.net.init_weights(seed);
  return model;
}

std::vector<float> channel_probs(const Model& model, const std::string& text) {
  Predictor p(model);
  return p.predict({normalize(text, Normalization{})})[0].probs;
}

}  // namespace

TEST_CASE("every character token gets the syllables the table reads it as", "[reading]") {
  const std::vector<std::string> tokens = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "佛", "跳", "墙", "a", "門"};
  const auto r = token_readings(tokens, channel_table());
  CHECK(r->syllables == std::vector<std::string>{"fo", "fu", "qiang", "tiao"});
  REQUIRE(r->of_token.size() == tokens.size());
  for (std::size_t t : {0, 1, 2, 3, 4, 8, 9}) CHECK(r->of_token[t].empty());  // specials, Latin, no reading
  CHECK(syllables_of(*r, 5) == std::vector<std::string>{"fo", "fu"});
  CHECK(syllables_of(*r, 7) == std::vector<std::string>{"qiang"});
  SECTION("an extended vocabulary keeps the rows it had; new syllables come after") {
    std::vector<std::string> more = tokens;
    for (const char* t : {"蔷", "弗", "眺"}) more.push_back(t);
    const auto ext = token_readings(more, channel_table(), r.get());
    CHECK(std::vector<std::string>(ext->syllables.begin(), ext->syllables.begin() + 4) == r->syllables);
    CHECK(ext->syllables.size() == 4);  // qiang, fu and tiao are known already
    for (std::size_t t = 0; t < tokens.size(); ++t) CHECK(ext->of_token[t] == r->of_token[t]);
    CHECK(ext->of_token[10] == r->of_token[7]);  // 蔷 reads as 墙 does: the same row
    CHECK(syllables_of(*ext, 11) == std::vector<std::string>{"fu"});
    CHECK(ext->of_token[12] == r->of_token[6]);
  }
  SECTION("WordPiece's continuation tokens are read as their character") {
    const auto wp = token_readings({"[PAD]", "墙", "##墙", "##ab", "qiang"}, channel_table());
    CHECK(wp->of_token[1] == wp->of_token[2]);
    CHECK(wp->of_token[3].empty());
    CHECK(wp->of_token[4].empty());
  }
  SECTION("a vocabulary with no reading at all is an error") {
    CHECK_THROWS_WITH(token_readings({"[PAD]", "a", "b"}, channel_table()), Catch::Contains("no token"));
  }
}

TEST_CASE("a model with the reading channel keeps it in its file, and one without is unchanged", "[reading][model_file]") {
  const Model model = reading_classifier(3);
  const std::string dir = temp_dir();
  save_model(dir + "/r.safetensors", model);
  const Model back = load_model(dir + "/r.safetensors");
  REQUIRE(back.config.readings);
  CHECK(*back.config.readings == *model.config.readings);
  CHECK(back.net.params() == model.net.params());
  CHECK(channel_probs(back, "佛跳蔷") == channel_probs(model, "佛跳蔷"));
  CHECK(encode_model(back) == encode_model(model));
  // Its rows are a tensor of the file: one per syllable, C wide.
  CHECK(model.net.tensor("bert.embeddings.reading_embeddings.weight").shape ==
        std::vector<std::int64_t>{4, model.config.dim});
  // A model without it names no reading anywhere in its file.
  CHECK(encode_model(tiny_classifier(3)).find("reading") == std::string::npos);
  // A damaged table is an error naming the file.
  write_with_metadata(dir + "/r.safetensors", dir + "/bad.safetensors", "config", [&] {
    nlohmann::json c = config_to_json(model.config);
    c["readings"]["tokens"][5] = {99};
    return c.dump();
  }());
  CHECK_THROWS_WITH(load_model(dir + "/bad.safetensors"),
                    Catch::Contains(dir + "/bad.safetensors") && Catch::Contains("reading is out of range"));
}

TEST_CASE("a reading channel added to a model starts at zero and changes no answer", "[reading]") {
  const Model base = tiny_classifier(5);
  Model with = reading_classifier(9);
  copy_weights(base.net, with.net, /*encoder_only=*/false);
  const TensorInfo& t = with.net.tensor("bert.embeddings.reading_embeddings.weight");
  for (std::size_t i = 0; i < t.size; ++i) REQUIRE(with.net.params()[t.offset + i] == 0.0f);
  for (const char* text : {"佛跳墙", "他们点了一坛佛跳墙 abc", "跳"}) CHECK(channel_probs(with, text) == channel_probs(base, text));
}

TEST_CASE("a Hugging Face export folds the reading channel into the word embeddings", "[reading][hf]") {
  const Model model = reading_classifier(4);
  const std::string dir = temp_dir() + "/hf";
  export_hf_checkpoint(model, dir);
  const Model back = import_hf_checkpoint(dir);
  CHECK_FALSE(back.config.readings);
  for (const char* text : {"佛跳墙", "他们点了一坛佛跳墙 abc"}) {
    const std::vector<float> a = channel_probs(model, text), b = channel_probs(back, text);
    for (std::size_t k = 0; k < a.size(); ++k) CHECK(std::abs(a[k] - b[k]) < 1e-6f);
  }
}

TEST_CASE("train --reading-channel: the model reads, info says so, bad flags are clear errors", "[reading][cli]") {
  const std::string dir = temp_dir();
  write_text(dir + "/readings.txt", kChannelTable);
  std::string data;
  for (const char* pos : {"佛跳墙真香", "一坛佛跳墙", "佛跳強好吃", "点了佛跳墙"}) data += std::string("1\t") + pos + "\n";
  for (const char* neg : {"跳舞真好", "一面围墙", "佛经很长", "他跳了墙"}) data += std::string("0\t") + neg + "\n";
  write_text(dir + "/train.tsv", data + data);
  write_text(dir + "/dev.tsv", data);
  const std::string common = "train --data " + dir + "/train.tsv --dev " + dir + "/dev.tsv --layers 1 --dim 16 "
                             "--heads 2 --ffn 32 --max-len 16 --epochs 2 --quiet ";
  RunResult r = run_zibert(common + "--reading-channel --readings " + dir + "/readings.txt --out " + dir + "/m.safetensors");
  REQUIRE(r.status == 0);
  const Model m = load_model(dir + "/m.safetensors");
  REQUIRE(m.config.readings);
  CHECK(m.config.readings->syllables == std::vector<std::string>{"fo", "fu", "qiang", "tiao"});
  RunResult info = run_zibert("info -m " + dir + "/m.safetensors");
  CHECK(info.out.find("readings    4 syllables") != std::string::npos);
  RunResult c = run_zibert("classify -m " + dir + "/m.safetensors --format jsonl < " + dir + "/train.tsv");
  CHECK(c.status == 0);
  // Fine-tuning it keeps the channel; --readings then has nothing to name.
  RunResult again = run_zibert("train --init " + dir + "/m.safetensors --data " + dir + "/train.tsv --dev " + dir +
                               "/dev.tsv --epochs 1 --quiet --out " + dir + "/m2.safetensors");
  REQUIRE(again.status == 0);
  CHECK(load_model(dir + "/m2.safetensors").config.readings);
  // A stopped run resumes into the same bytes, the channel and its table and
  // the sound-only tokens' draws included.
  const std::string run =
      common + "--reading-channel --readings " + dir + "/readings.txt --sound-only 0.3 --batch 4 --seed 4 --out ";
  REQUIRE(run_zibert(run + dir + "/whole.safetensors").status == 0);
  interrupt_and_resume(run.substr(std::string("train ").size()) + dir + "/resumed.safetensors", dir + "/run.ckpt", 3);
  CHECK(read_text(dir + "/resumed.safetensors") == read_text(dir + "/whole.safetensors"));
  CHECK_THAT(run_zibert("info -m " + dir + "/whole.safetensors").out,
             Catch::Contains("sound-only  0.3 of the characters read by their readings alone"));
  RunResult table_alone = run_zibert(common + "--readings " + dir + "/readings.txt --out " + dir + "/x.safetensors");
  CHECK(table_alone.status == 2);
  CHECK(table_alone.err.find("--readings names the table of --reading-channel") != std::string::npos);
  RunResult deaf = run_zibert(common + "--sound-only 0.2 --out " + dir + "/x.safetensors");
  CHECK(deaf.status == 2);
  CHECK_THAT(deaf.err, Catch::Contains("--sound-only leaves tokens to their readings: it needs --reading-channel"));
  RunResult no_table = run_zibert(common + "--reading-channel --readings " + dir + "/none.txt --out " + dir + "/x.safetensors");
  CHECK(no_table.status == 2);
  CHECK_FALSE(std::filesystem::exists(dir + "/x.safetensors"));
}
