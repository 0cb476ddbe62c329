// Multi-label classifiers (fastText's -loss ova): train
// --multi-label on each data format, classify's label sets, eval's
// per-label and pooled scores, and the combinations that are refused.
#include <catch2/catch.hpp>
#include <fstream>
#include <nlohmann/json.hpp>

#include "helpers.hpp"
#include "zibert/base/random.hpp"
#include "zibert/model/model_file.hpp"

using namespace zibert;
using namespace zibert::test;

namespace {

// Texts that name a dish (food), a drink (drink) and/or a price (price), each
// independently, between filler words; a text naming none is "none".
struct Row {
  std::vector<std::string> labels;
  std::string text;
};

std::vector<Row> rows(std::size_t n, std::uint64_t seed) {
  const std::vector<std::string> food{"红烧肉", "麻婆豆腐", "小笼包", "饺子", "炒饭"},
      drink{"奶茶", "咖啡", "豆浆", "果汁", "啤酒"}, price{"太贵了", "很便宜", "价格实惠", "涨价了", "打折"},
      filler{"今天", "我们", "中午", "一起", "觉得", "还是", "那家店", "朋友说", "感觉"};
  Rng r(seed);
  auto pick = [&](const std::vector<std::string>& v) { return v[r.below(v.size())]; };
  std::vector<Row> out;
  for (std::size_t i = 0; i < n; ++i) {
    Row row;
    row.text = pick(filler);
    for (const auto& [name, words] : {std::pair{"drink", &drink}, {"food", &food}, {"price", &price}})
      if (r.below(100) < 45) {
        row.labels.push_back(name);
        row.text += pick(*words) + pick(filler);
      }
    if (row.labels.empty()) row.labels.push_back("none");
    out.push_back(row);
  }
  return out;
}

std::string join(const std::vector<std::string>& v, const std::string& sep, const std::string& prefix = "") {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : sep) + prefix + s;
  return out;
}

std::string as_tsv(const std::vector<Row>& rs) {
  std::string out;
  for (const Row& r : rs) out += join(r.labels, ",") + "\t" + r.text + "\n";
  return out;
}
std::string as_fasttext(const std::vector<Row>& rs) {
  std::string out;
  for (const Row& r : rs) out += join(r.labels, " ", "__label__") + " " + r.text + "\n";
  return out;
}
std::string as_jsonl(const std::vector<Row>& rs) {
  std::string out;
  for (const Row& r : rs) out += nlohmann::json{{"text", r.text}, {"label", r.labels}}.dump() + "\n";
  return out;
}

// One model for the whole file, trained once on the TSV form and shared by
// the test processes (it takes some 45 s under the sanitizers).
const std::string& trained_dir() {
  static const std::string dir = shared_dir("multi-label", [](const std::string& d) {
    write_text(d + "/train.tsv", as_tsv(rows(600, 1)));
    write_text(d + "/dev.tsv", as_tsv(rows(150, 2)));
    write_text(d + "/test.jsonl", as_jsonl(rows(200, 3)));
    RunResult r = run_zibert("train --multi-label --data " + d + "/train.tsv --dev " + d + "/dev.tsv --out " + d +
                             "/ml.safetensors --epochs 25 --lr 2e-3 --threads 2 --log " + d + "/log.jsonl");
    INFO(r.err);
    REQUIRE(r.status == 0);
    REQUIRE_THAT(r.err, Catch::Contains("no temperature is fitted") && Catch::Contains("dev micro-F1"));
  });
  return dir;
}

}  // namespace

TEST_CASE("train --multi-label learns independent labels and classify prints each text's label set", "[multi-label][cli]") {
  const std::string& d = trained_dir();
  const std::string m = " -m " + d + "/ml.safetensors ";
  const std::string in = temp_dir() + "/in.txt";
  write_text(in, "我们奶茶太贵了\n麻婆豆腐我们\n今天咖啡红烧肉打折\n");
  RunResult r = run_zibert("classify" + m + in);
  REQUIRE(r.status == 0);
  std::vector<std::string> out = lines_of(r.out);
  REQUIRE(out.size() == 3);
  CHECK_THAT(out[0], Catch::Matches("drink,price\t0\\.[0-9]{4},0\\.[0-9]{4}\t我们奶茶太贵了"));
  CHECK_THAT(out[1], Catch::Matches("food\t0\\.[0-9]{4}\t麻婆豆腐我们"));
  CHECK_THAT(out[2], Catch::StartsWith("drink,food,price\t"));
  SECTION("JSONL lists the labels, every label's probability and log-odds") {
    RunResult j = run_zibert("classify --format jsonl" + m + in);
    const nlohmann::json first = nlohmann::json::parse(lines_of(j.out)[0]);
    CHECK(first["labels"] == nlohmann::json({"drink", "price"}));
    CHECK(first["probs"].size() == 4);
    CHECK(first["probs"]["drink"].get<double>() >= 0.5);
    CHECK(first["probs"]["food"].get<double>() < 0.5);
    CHECK(first["logits"]["drink"].get<double>() > 0);
    CHECK(first["logits"]["food"].get<double>() < 0);
    CHECK_FALSE(first.contains("label"));
  }
  SECTION("--threshold decides which labels a text gets; one below every label keeps the most probable") {
    RunResult all = run_zibert("classify --threshold 0" + m + in);
    CHECK_THAT(lines_of(all.out)[1], Catch::StartsWith("drink,food,none,price\t"));
    RunResult none = run_zibert("classify --threshold 1.0 --format jsonl" + m + in);
    CHECK(nlohmann::json::parse(lines_of(none.out)[1])["labels"] == nlohmann::json({"food"}));
  }
  SECTION("-k lists the k most probable labels with their probabilities") {
    RunResult k = run_zibert("classify -k 2 --no-text" + m + in);
    CHECK_THAT(lines_of(k.out)[0], Catch::Matches("(drink|price)\t0\\.[0-9]{4}\t(drink|price)\t0\\.[0-9]{4}"));
  }
  SECTION("--filter --label matches the texts whose labels include it, -v the others, -c counts") {
    CHECK(run_zibert("classify --filter --label price" + m + in).out == "我们奶茶太贵了\n今天咖啡红烧肉打折\n");
    CHECK(run_zibert("classify --filter -v --label price" + m + in).out == "麻婆豆腐我们\n");
    CHECK(run_zibert("classify -c --label food" + m + in).out == "2\n");
    RunResult no_label = run_zibert("classify --filter" + m + in);
    CHECK(no_label.status == 2);
    CHECK_THAT(no_label.err, Catch::Contains("multi-label model has no positive label") && Catch::Contains("--label"));
  }
}

TEST_CASE("eval on a multi-label model: per-label P/R/F1, micro and macro F1, exact match", "[multi-label][cli]") {
  const std::string& d = trained_dir();
  RunResult r = run_zibert("eval --json -m " + d + "/ml.safetensors --data " + d + "/test.jsonl");
  INFO(r.err);
  REQUIRE(r.status == 0);
  const nlohmann::json j = nlohmann::json::parse(r.out);
  CHECK(j["examples"] == 200);
  CHECK(j["multi_label"] == true);
  CHECK(j["micro_f1"].get<double>() >= 0.95);
  CHECK(j["exact_match"].get<double>() >= 0.9);
  CHECK(j["labels"].size() == 4);
  for (const char* label : {"drink", "food", "price"}) {
    INFO(label);
    CHECK(j["labels"][label]["f1"].get<double>() >= 0.95);
    CHECK(j["labels"][label]["support"].get<std::int64_t>() > 50);
  }
  RunResult table = run_zibert("eval -m " + d + "/ml.safetensors --data " + d + "/test.jsonl");
  CHECK_THAT(table.out, Catch::Contains("exact match") && Catch::Contains("micro-F1") && Catch::Contains("macro-F1") &&
                            Catch::Contains("hamming loss"));
  SECTION("info and the file say multi-label") {
    CHECK_THAT(run_zibert("info -m " + d + "/ml.safetensors").out,
               Catch::Contains("multi-label classifier") && Catch::Contains("dev         exact match"));
    const Model model = load_model(d + "/ml.safetensors");
    CHECK(model.config.multi_label);
    CHECK(model.classifier.positive.empty());
    CHECK_FALSE(model.classifier.calibration);
    CHECK(model.training.contains("dev_micro_f1"));
    Model tempered = model;  // a temperature calibrates a softmax: the reader refuses one here
    tempered.classifier.calibration = Calibration{};
    const std::string path = temp_dir() + "/tempered.safetensors";
    save_model(path, tempered);
    CHECK_THROWS_WITH(load_model(path), Catch::Contains("calibrates a softmax"));
  }
}

TEST_CASE("multi-label training reads fastText and JSONL lists, and resumes exactly", "[multi-label][cli]") {
  const std::string d = temp_dir();
  write_text(d + "/train.txt", as_fasttext(rows(200, 4)));
  write_text(d + "/train.jsonl", as_jsonl(rows(200, 4)));
  for (const char* f : {"train.txt", "train.jsonl"}) {
    INFO(f);
    RunResult r = run_zibert(std::string("train --multi-label --epochs 2 --threads 1 -q --data ") + d + "/" + f +
                             " --out " + d + "/" + f + ".safetensors");
    INFO(r.err);
    CHECK(r.status == 0);
  }
  // The same rows in either format train the same weights (the file names in the metadata differ).
  CHECK(load_model(d + "/train.txt.safetensors").net.params() == load_model(d + "/train.jsonl.safetensors").net.params());
  RunResult whole = run_zibert("train --multi-label --epochs 2 --threads 1 -q --data " + d + "/train.txt --out " + d +
                               "/whole.safetensors");
  REQUIRE(whole.status == 0);
  interrupt_and_resume("--multi-label --epochs 2 --threads 1 -q --data " + d + "/train.txt --out " + d +
                           "/resumed.safetensors", d + "/ck", 7);
  CHECK(read_text(d + "/resumed.safetensors") == read_text(d + "/whole.safetensors"));
}

TEST_CASE("multi-label: what would do nothing or mix the two kinds is refused with exit 2", "[multi-label][cli]") {
  const std::string& d = trained_dir();
  const std::string t = temp_dir();
  write_text(t + "/multi.txt", "__label__a __label__b 红烧肉\n__label__a 奶茶\n");
  RunResult r = run_zibert("train --data " + t + "/multi.txt --out " + t + "/x.safetensors");
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::Contains(t + "/multi.txt:1:") && Catch::Contains("--multi-label"));
  r = run_zibert("train --multi-label --positive a --data " + t + "/multi.txt --out " + t + "/x.safetensors");
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::Contains("no positive label"));
  r = run_zibert("train --multi-label --label-smoothing 0.1 --data " + t + "/multi.txt --out " + t + "/x.safetensors");
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::Contains("--label-smoothing"));
  r = run_zibert("calibrate -m " + d + "/ml.safetensors --data " + d + "/dev.tsv --out " + t + "/c.safetensors");
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::Contains("multi-label"));
  r = run_zibert("eval --raw-probs -m " + d + "/ml.safetensors --data " + d + "/dev.tsv");
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::Contains("--raw-probs"));
  write_text(t + "/single.tsv", "a\t红烧肉\nb\t奶茶\na\t饺子\nb\t咖啡\n");
  REQUIRE(run_zibert("train -q --epochs 1 --data " + t + "/single.tsv --dev " + t + "/single.tsv --out " + t +
                     "/single.safetensors").status == 0);
  r = run_zibert("train --multi-label --init " + t + "/single.safetensors --data " + t + "/multi.txt --out " + t +
                 "/x.safetensors");
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::Contains("single-label classifier"));
  CHECK_FALSE(std::ifstream(t + "/x.safetensors").good());
}
