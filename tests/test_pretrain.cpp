// zibert pretrain, fine-tuning from its encoder, fill-mask and embed on an
// encoder, all through the CLI.
#include <catch2/catch.hpp>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "helpers.hpp"
#include "zibert/model/model_file.hpp"

using namespace zibert;
using namespace zibert::test;
namespace fs = std::filesystem;

namespace {

// Raw text: the toy corpus's texts, one per line, with blank lines among them.
std::string text_dir() {
  const std::string dir = temp_dir();
  REQUIRE(run_shell("python3 " ZIBERT_SOURCE_DIR "/tests/fixtures/toy_corpus.py " + dir + "/toy.tsv 400 3").status == 0);
  REQUIRE(run_shell("tail -n +2 " + dir + "/toy.tsv | cut -f2 | awk 'NR % 50 == 0 {print \"\"} {print}' > " + dir +
                    "/text.txt").status == 0);
  REQUIRE(run_shell("tail -n +2 " + dir + "/toy.tsv | cut -f1,2 > " + dir + "/train.tsv").status == 0);
  return dir;
}

// 400 lines of ~25 characters in sequences of 32: about 19 steps an epoch.
const std::string kShape = " --layers 2 --dim 16 --heads 2 --ffn 32 --max-len 32 --batch 16 --threads 2 -q";

std::string pretrain_cmd(const std::string& dir, const std::string& out, const std::string& more = "", int epochs = 3) {
  return "pretrain --text " + dir + "/text.txt --out " + dir + "/" + out + " --epochs " + std::to_string(epochs) +
         kShape + more;
}

nlohmann::json info(const std::string& path) { return nlohmann::json::parse(run_zibert("info --json -m " + path).out); }

}  // namespace

TEST_CASE("pretrain writes an encoder: cls.predictions tensors, no classifier, its record and log", "[pretrain]") {
  const std::string dir = text_dir();
  RunResult r = run_zibert(pretrain_cmd(dir, "enc.safetensors", " --log " + dir + "/log.jsonl"));
  INFO(r.err);
  REQUIRE(r.status == 0);
  const Model enc = load_model(dir + "/enc.safetensors");
  CHECK(enc.config.task == Task::mlm);
  CHECK(enc.classifier.labels.empty());
  std::vector<std::string> names;
  for (const TensorInfo& t : enc.net.layout()) names.push_back(t.name);
  for (const char* name : {"cls.predictions.transform.dense.weight", "cls.predictions.transform.LayerNorm.bias",
                           "cls.predictions.bias", "bert.encoder.layer.1.output.dense.weight"})
    CHECK(std::find(names.begin(), names.end(), name) != names.end());
  CHECK(std::find(names.begin(), names.end(), "classifier.weight") == names.end());
  const nlohmann::json j = info(dir + "/enc.safetensors");
  CHECK(j["task"] == "mlm");
  CHECK(j["config"]["task"] == "mlm");
  const nlohmann::json& t = j["training"];
  CHECK(t["task"] == "mlm");
  CHECK(t["train_lines"].get<int>() + 20 == 400);  // 5 % of the 400 held out
  CHECK(t["history"].size() == 3);
  CHECK(t["dev_mlm_accuracy"].get<double>() >= 0.0);
  CHECK(t["dev_masked_tokens"].get<int>() > 0);
  const auto lines = lines_of(read_text(dir + "/log.jsonl"));
  REQUIRE(lines.size() == 3);
  const nlohmann::json first = nlohmann::json::parse(lines[0]), last = nlohmann::json::parse(lines[2]);
  CHECK(last["dev_mlm_loss"].get<double>() < first["dev_mlm_loss"].get<double>());  // it learns
  CHECK(first.contains("examples_per_s"));
  const std::string text = run_zibert("info -m " + dir + "/enc.safetensors").out;
  CHECK_THAT(text, Catch::Contains("BERT encoder") && Catch::Contains("masked-token accuracy"));
}

TEST_CASE("pretrain is deterministic, and an interrupted run resumes to the same bytes", "[pretrain][resume]") {
  const std::string dir = text_dir();
  REQUIRE(run_zibert(pretrain_cmd(dir, "a.safetensors")).status == 0);
  REQUIRE(run_zibert(pretrain_cmd(dir, "b.safetensors")).status == 0);
  CHECK(read_text(dir + "/a.safetensors") == read_text(dir + "/b.safetensors"));
  const int step = GENERATE(7, 30);
  RunResult r = run_zibert(pretrain_cmd(dir, "c.safetensors", " --interrupt-at-step " + std::to_string(step)));
  CHECK(r.status == 130);
  CHECK_THAT(r.err, Catch::Contains("continue with: zibert pretrain --resume " + dir + "/c.safetensors.ckpt"));
  CHECK_FALSE(fs::exists(dir + "/c.safetensors"));
  r = run_zibert("pretrain -q --resume " + dir + "/c.safetensors.ckpt");
  INFO(r.err);
  REQUIRE(r.status == 0);
  CHECK(read_text(dir + "/a.safetensors") == read_text(dir + "/c.safetensors"));
  CHECK_FALSE(fs::exists(dir + "/c.safetensors.ckpt"));
  // A classifier's checkpoint is not pretrain's to continue, nor the other way round.
  REQUIRE(run_zibert(pretrain_cmd(dir, "d.safetensors", " --interrupt-at-step 3")).status == 130);
  r = run_zibert("train -q --resume " + dir + "/d.safetensors.ckpt");
  CHECK(r.status == 2);
  // A text that changed since the checkpoint is refused, naming it.
  write_text(dir + "/text.txt", read_text(dir + "/text.txt") + "多了一行\n");
  r = run_zibert("pretrain -q --resume " + dir + "/d.safetensors.ckpt");
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::Contains(dir + "/text.txt: changed since the checkpoint was written"));
}

TEST_CASE("pretrain: bad text and unwritable outputs are errors before any work", "[pretrain]") {
  const std::string dir = text_dir();
  write_text(dir + "/bad.txt", "第一行\n\n好的\xff文字\n");
  RunResult r = run_zibert("pretrain --text " + dir + "/bad.txt --out " + dir + "/e.safetensors -q");
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::StartsWith("zibert: error: " + dir + "/bad.txt:3:7: invalid UTF-8\n"));
  write_text(dir + "/empty.txt", "\n  \n\n");
  r = run_zibert("pretrain --text " + dir + "/empty.txt --out " + dir + "/e.safetensors -q");
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::Contains("no text"));
  r = run_zibert(pretrain_cmd(dir, "no/such/dir/e.safetensors"));
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::Contains("no/such/dir"));
  r = run_zibert(pretrain_cmd(dir, "e.safetensors", " --init " + dir + "/text.txt"));
  CHECK(r.status == 2);
  CHECK_FALSE(fs::exists(dir + "/e.safetensors"));
  r = run_zibert("pretrain --text " + dir + "/text.txt --out " + dir + "/e.safetensors --vocab-size 50 --vocab-from " +
                 dir + "/text.txt");
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::Contains("excludes"));
  r = run_zibert(pretrain_cmd(dir, "e.safetensors", " --dev-text " + dir + "/text.txt --holdout 0.1"));
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::StartsWith("zibert: error: --dev-text excludes --holdout"));
}

TEST_CASE("pretrain bounds the vocabulary: --vocab-size, --min-count, --vocab-from a list or a model", "[pretrain]") {
  const std::string dir = text_dir();
  REQUIRE(run_zibert(pretrain_cmd(dir, "v.safetensors", " --vocab-size 40", 1)).status == 0);
  CHECK(info(dir + "/v.safetensors")["config"]["vocab_size"] == 40);
  write_text(dir + "/chars.txt", "佛\n跳\n墙\n[MASK]\n\n丐\n");
  RunResult r = run_zibert(pretrain_cmd(dir, "w.safetensors", " --vocab-from " + dir + "/chars.txt", 1));
  INFO(r.err);
  REQUIRE(r.status == 0);
  const Model w = load_model(dir + "/w.safetensors");
  CHECK(w.tokenizer.vocab().size() == 5 + 4);
  CHECK(w.tokenizer.vocab().id(U'墙') != kUnk);
  REQUIRE(run_zibert(pretrain_cmd(dir, "x.safetensors", " --vocab-from " + dir + "/w.safetensors", 1)).status == 0);
  CHECK(load_model(dir + "/x.safetensors").tokenizer.vocab().tokens() == w.tokenizer.vocab().tokens());
  write_text(dir + "/two.txt", "佛跳\n");
  r = run_zibert(pretrain_cmd(dir, "y.safetensors", " --vocab-from " + dir + "/two.txt"));
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::StartsWith("zibert: error: " + dir + "/two.txt:1: expected one character per line"));
}

TEST_CASE("train --init ENCODER fine-tunes it: its vocabulary and shape, fresh head, both phases recorded", "[pretrain][train]") {
  const std::string dir = text_dir();
  REQUIRE(run_zibert(pretrain_cmd(dir, "enc.safetensors")).status == 0);
  RunResult r = run_zibert("train --init " + dir + "/enc.safetensors --data " + dir + "/train.tsv --out " + dir +
                           "/clf.safetensors --epochs 2 --threads 2 -q");
  INFO(r.err);
  REQUIRE(r.status == 0);
  const Model enc = load_model(dir + "/enc.safetensors"), clf = load_model(dir + "/clf.safetensors");
  CHECK(clf.config.task == Task::classify);
  CHECK(clf.classifier.labels == std::vector<std::string>{"0", "1"});
  CHECK(clf.classifier.positive == "1");  // guessed from the labels, as from scratch (an encoder has none)
  CHECK(clf.tokenizer.vocab().tokens() == enc.tokenizer.vocab().tokens());
  CHECK(clf.config.dim == enc.config.dim);
  CHECK(clf.config.layers == enc.config.layers);
  // With lr 0 nothing moves: the encoder's tensors arrive whole in the classifier.
  REQUIRE(run_zibert("train --init " + dir + "/enc.safetensors --data " + dir + "/train.tsv --out " + dir +
                     "/frozen.safetensors --epochs 1 --lr 0 --threads 2 -q").status == 0);
  const Model frozen = load_model(dir + "/frozen.safetensors");
  std::size_t compared = 0;
  for (const TensorInfo& t : frozen.net.layout()) {
    if (!is_encoder_tensor(t.name)) continue;
    const TensorInfo& e = enc.net.tensor(t.name);
    INFO(t.name);
    CHECK(std::equal(frozen.net.params().begin() + t.offset, frozen.net.params().begin() + t.offset + t.size,
                     enc.net.params().begin() + e.offset));
    ++compared;
  }
  CHECK(compared == frozen.net.layout().size() - 4);  // all but the pooler's and the classifier's
  const nlohmann::json j = info(dir + "/clf.safetensors");
  CHECK(j["training"]["init"] == true);
  CHECK(j["training"]["pretraining"]["task"] == "mlm");
  CHECK(j["training"]["pretraining"]["epochs"] == 3);
  CHECK(j["training"]["train_unknown_characters"] == 0);
  CHECK(j["training"]["lr"] == 3e-4);  // fine-tuning's default, lower than from scratch
  CHECK_THAT(run_zibert("info -m " + dir + "/clf.safetensors").out, Catch::Contains("encoder dev masked-token accuracy"));
  // Shape flags stay refused; characters the encoder never saw count as [UNK].
  r = run_zibert("train --init " + dir + "/enc.safetensors --data " + dir + "/train.tsv --out " + dir +
                 "/c.safetensors --layers 3");
  CHECK(r.status == 2);
  write_text(dir + "/new.tsv", "1\t佛跳墙龘龘\n0\t佛鱻\n1\t佛跳墙\n0\t佛佛\n");
  r = run_zibert("train --init " + dir + "/enc.safetensors --data " + dir + "/new.tsv --dev " + dir +
                 "/new.tsv --out " + dir + "/u.safetensors --epochs 1 -q");
  REQUIRE(r.status == 0);
  CHECK(info(dir + "/u.safetensors")["training"]["train_unknown_characters"] == 3);
  REQUIRE(run_zibert("train --init " + dir + "/enc.safetensors --data " + dir + "/new.tsv --dev " + dir +
                     "/new.tsv --out " + dir + "/v.safetensors --epochs 1 -q --lr 1e-3").status == 0);
  CHECK(info(dir + "/v.safetensors")["training"]["lr"] == 1e-3);  // --lr given wins
  CHECK_THAT(run_zibert("info -m " + dir + "/u.safetensors").out, Catch::Contains("[UNK]       3 of the"));
  // An encoder cannot classify; classify says so.
  r = run_zibert("classify -m " + dir + "/enc.safetensors " + dir + "/text.txt");
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::Contains("encoder"));
}

TEST_CASE("fill-mask lists the top guesses per mask, and embed reads an encoder", "[pretrain][fill-mask]") {
  const std::string dir = text_dir();
  REQUIRE(run_zibert(pretrain_cmd(dir, "enc.safetensors")).status == 0);
  const std::string m = " -m " + dir + "/enc.safetensors";
  RunResult r = run_zibert("fill-mask" + m + " -k 3 '云佛跳[MASK]仃丐[MASK]'");
  INFO(r.err);
  REQUIRE(r.status == 0);
  const auto lines = lines_of(r.out);
  REQUIRE(lines.size() == 6);  // 2 masks × 3 guesses
  double previous = 1.0;
  for (std::size_t i = 0; i < 3; ++i) {
    const auto tab = lines[i].find('\t', lines[i].find('\t', lines[i].find('\t') + 1) + 1);
    const double p = std::stod(lines[i].substr(tab + 1));
    CHECK(p <= previous);
    CHECK(p > 0.0);
    previous = p;
  }
  CHECK_THAT(lines[0], Catch::StartsWith("1\t1\t"));
  CHECK_THAT(lines[5], Catch::StartsWith("2\t3\t") && Catch::Contains("云佛跳[MASK]仃丐"));
  r = run_zibert("fill-mask" + m + " --json -k 2 '佛[MASK]墙'");
  REQUIRE(r.status == 0);
  const nlohmann::json j = nlohmann::json::parse(r.out);
  CHECK(j["masks"].size() == 1);
  CHECK(j["masks"][0].size() == 2);
  r = run_zibert("fill-mask" + m + " '没有面具'");
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::Contains("no [MASK]"));
  r = run_zibert("fill-mask -m " ZIBERT_SOURCE_DIR "/models/fotiaoqiang.safetensors '佛[MASK]墙'");
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::Contains("needs an encoder"));
  r = run_zibert("embed" + m + " --format jsonl " + dir + "/text.txt");
  REQUIRE(r.status == 0);
  CHECK(lines_of(r.out).size() == 408);  // one per input line, blank ones included
  CHECK(nlohmann::json::parse(lines_of(r.out)[0])["vector"].size() == 16);
}

TEST_CASE("train --pretrain-epochs pretrains on the training texts and more, then fine-tunes", "[pretrain][train]") {
  const std::string dir = text_dir();
  write_text(dir + "/extra.txt", "龘鱻是两个很少见的字\n\n佛跳墙\n");
  RunResult r = run_zibert("train --data " + dir + "/train.tsv --out " + dir + "/m.safetensors --pretrain-epochs 2 "
                           "--pretrain-text " + dir + "/extra.txt --epochs 1 --dim 16 --heads 2 --ffn 32 --max-len 32 "
                           "--threads 2 -q");
  INFO(r.err);
  REQUIRE(r.status == 0);
  const nlohmann::json t = info(dir + "/m.safetensors")["training"];
  CHECK(t["pretraining"]["task"] == "mlm");
  CHECK(t["pretraining"]["epochs"] == 2);
  CHECK(t["pretraining"]["text"] == nlohmann::json::array({"train.tsv", "extra.txt"}));
  CHECK(t["pretraining"]["train_lines"].get<int>() == 360 + 2);  // 10 % of the 400 held out as dev
  CHECK(t["epochs"] == 1);
  CHECK(load_model(dir + "/m.safetensors").tokenizer.vocab().id(U'龘') != kUnk);  // the extra text's characters
  r = run_zibert("train --data " + dir + "/train.tsv --out " + dir + "/n.safetensors --pretrain-text " + dir +
                 "/extra.txt");
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::Contains("requires --pretrain-epochs"));
  r = run_zibert("train --data " + dir + "/train.tsv --out " + dir + "/n.safetensors --pretrain-epochs 1 --init " +
                 dir + "/m.safetensors");
  CHECK(r.status == 2);
  // A stop while pretraining says that phase keeps no checkpoint.
  r = run_zibert("train --data " + dir + "/train.tsv --out " + dir + "/n.safetensors --pretrain-epochs 2 --epochs 1 " +
                 "--dim 16 --heads 2 --ffn 32 --max-len 32 -q --interrupt-at-step 2");
  CHECK(r.status == 130);
  CHECK_THAT(r.err, Catch::Contains("while pretraining (phase 1)"));
  CHECK_FALSE(fs::exists(dir + "/n.safetensors"));
}

TEST_CASE("the shipped encoder is under 10 MB and fills in what its corpus taught it", "[pretrain][shipped]") {
  const std::string path = ZIBERT_SOURCE_DIR "/models/zh-encoder.safetensors";
  CHECK(fs::file_size(path) <= 10'000'000);
  const nlohmann::json j = info(path);
  CHECK(j["task"] == "mlm");
  CHECK(j["training"]["dev_mlm_accuracy"].get<double>() > 0.4);
  RunResult r = run_zibert("fill-mask -k 1 -m " + path + " '请使用[MASK]令行参数。'");
  REQUIRE(r.status == 0);
  CHECK_THAT(r.out, Catch::StartsWith("1\t1\t命\t"));
}
