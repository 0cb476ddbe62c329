// Calibration: temperature scaling, its fit, the measures
// (ECE, Brier, NLL), the model file's "calibration" metadata, and the
// commands that fit, apply, report and bypass it.
#include <catch2/catch.hpp>

#include <cmath>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "helpers.hpp"
#include "zibert/base/error.hpp"
#include "zibert/base/random.hpp"
#include "zibert/model/calibration.hpp"
#include "zibert/model/model_file.hpp"
#include "zibert/model/safetensors.hpp"

using namespace zibert;
using namespace zibert::test;

namespace {

// n binary examples that all say p(label 1) = conf, of which a fraction
// `right` really are label 1.
struct Synthetic {
  std::vector<float> probs;
  std::vector<std::int32_t> gold;
};
Synthetic overconfident(int n, float conf, double right) {
  Synthetic s;
  for (int i = 0; i < n; ++i) {
    s.probs.push_back(1 - conf);
    s.probs.push_back(conf);
    s.gold.push_back(i < right * n ? 1 : 0);
  }
  return s;
}

}  // namespace

TEST_CASE("calibration_stats: ECE, Brier and NLL by hand", "[calibration]") {
  // Two examples: p = (0.2, 0.8) gold 1, p = (0.6, 0.4) gold 1.
  const std::vector<float> probs = {0.2f, 0.8f, 0.6f, 0.4f};
  const CalibrationStats s = calibration_stats(probs, 2, {1, 1});
  CHECK(s.examples == 2);
  // Bins: 0.8 in bin 12 (right), 0.6 in bin 9 (wrong): ECE = ½|1 − 0.8| + ½|0 − 0.6|.
  CHECK(s.ece == Approx(0.5 * 0.2 + 0.5 * 0.6).epsilon(1e-6));
  CHECK(s.brier == Approx(0.5 * (0.04 + 0.04) + 0.5 * (0.36 + 0.36)).epsilon(1e-6));
  CHECK(s.nll == Approx(-(std::log(0.8) + std::log(0.4)) / 2).epsilon(1e-6));
  REQUIRE(s.bins.size() == static_cast<std::size_t>(kCalibrationBins));
  CHECK(s.bins[12].count == 1);
  CHECK(s.bins[9].count == 1);
  CHECK(s.bins[9].accuracy == 0.0);
}

TEST_CASE("apply_temperature keeps the best label and T = 1 changes nothing", "[calibration]") {
  std::vector<float> p = {0.1f, 0.7f, 0.2f};
  const std::vector<float> before = p;
  apply_temperature(p.data(), 3, 1.0);
  for (int c = 0; c < 3; ++c) CHECK(p[c] == Approx(before[c]).epsilon(1e-6));
  apply_temperature(p.data(), 3, 4.0);  // softer, the same order
  CHECK(p[1] > p[2]);
  CHECK(p[2] > p[0]);
  CHECK(p[1] < 0.7f);
  CHECK(p[0] + p[1] + p[2] == Approx(1.0f).epsilon(1e-6));
  std::vector<float> sure = {0.0f, 1.0f};  // a zero stays zero
  apply_temperature(sure.data(), 2, 3.0);
  CHECK(sure[0] == 0.0f);
  CHECK(sure[1] == 1.0f);
}

TEST_CASE("fit_temperature softens an overconfident model and sharpens a timid one", "[calibration]") {
  Synthetic over = overconfident(1000, 0.99f, 0.8);  // says 99 %, right 80 %
  const double t_over = fit_temperature(over.probs, 2, over.gold);
  CHECK(t_over > 1.5);
  // The fitted T puts the confidence near the accuracy: p^(1/T) with p = .99 → ≈ .8.
  std::vector<float> fixed = over.probs;
  for (std::size_t r = 0; r < over.gold.size(); ++r) apply_temperature(&fixed[r * 2], 2, t_over);
  CHECK(fixed[1] == Approx(0.8).margin(0.01));
  CHECK(calibration_stats(fixed, 2, over.gold).nll < calibration_stats(over.probs, 2, over.gold).nll);
  CHECK(calibration_stats(fixed, 2, over.gold).ece < 0.02);

  Synthetic timid = overconfident(1000, 0.6f, 0.95);  // says 60 %, right 95 %
  CHECK(fit_temperature(timid.probs, 2, timid.gold) < 0.5);
  CHECK_THROWS_AS(fit_temperature({}, 2, {}), Error);
}

TEST_CASE("a model file keeps its calibration and refuses a bad one", "[calibration][model_file]") {
  const std::string dir = temp_dir();
  Model model = load_model(ZIBERT_SOURCE_DIR "/models/fotiaoqiang.safetensors");
  Calibration c;
  c.temperature = 2.5;
  c.before.nll = 0.3;
  c.after.nll = 0.1;
  c.examples = 10;
  model.classifier.calibration = c;
  save_model(dir + "/c.safetensors", model);
  Model back = load_model(dir + "/c.safetensors");
  REQUIRE(back.classifier.calibration);
  CHECK(back.classifier.calibration->temperature == 2.5);
  CHECK(back.classifier.calibration->after.nll == 0.1);
  CHECK(back.classifier.calibration->examples == 10);

  // The metadata rewritten by hand: each bad form exits 2 naming the file.
  for (const char* bad : {R"({"temperature": 0})", R"({"temperature": -1})", R"({"temperature": "2"})",
                                 R"({"method": "platt", "temperature": 2})", R"({})", R"([1])",
                                 R"({"temperature": 2, "before": {"nll": "x"}})"}) {
    write_with_metadata(dir + "/c.safetensors", dir + "/bad.safetensors", "calibration", bad);
    RunResult r = run_zibert("classify -m " + dir + "/bad.safetensors " ZIBERT_SOURCE_DIR "/data/demo.txt");
    INFO(bad << ": " << r.err);
    CHECK(r.status == 2);
    CHECK_THAT(r.err, Catch::Contains(dir + "/bad.safetensors: not a usable zibert model: metadata \"calibration\""));
  }
}

TEST_CASE("train fits a temperature, which classify, eval and info use and --raw-probs bypasses",
          "[calibration][cli]") {
  const std::string dir = temp_dir();
  REQUIRE(run_shell("python3 " ZIBERT_SOURCE_DIR "/tests/fixtures/toy_corpus.py " + dir + "/train.tsv 600 5 --pool 30 "
                    "--min-len 3 --max-len 12").status == 0);
  REQUIRE(run_shell("python3 " ZIBERT_SOURCE_DIR "/tests/fixtures/toy_corpus.py " + dir + "/dev.tsv 300 6 --pool 30 "
                    "--min-len 3 --max-len 12").status == 0);
  const std::string common = "--epochs 6 --lr 3e-3 --dim 16 --heads 2 --ffn 32 --max-len 16 --threads 2";
  RunResult r = run_zibert("train --data " + dir + "/train.tsv --dev " + dir + "/dev.tsv --out " + dir +
                           "/m.safetensors " + common);
  INFO(r.err);
  REQUIRE(r.status == 0);
  CHECK_THAT(r.err, Catch::Contains("calibrated on dev: temperature"));
  nlohmann::json info = nlohmann::json::parse(run_zibert("info --json -m " + dir + "/m.safetensors").out);
  REQUIRE(info["calibration"].is_object());
  const double t = info["calibration"]["temperature"].get<double>();
  CHECK(t != 1.0);
  CHECK(info["calibration"]["after"]["nll"].get<double>() <= info["calibration"]["before"]["nll"].get<double>());
  CHECK_THAT(run_zibert("info -m " + dir + "/m.safetensors").out, Catch::Contains("calibration temperature"));

  // eval: both sets of measures; the calibrated NLL on the dev set it was fitted on is not worse.
  RunResult ev = run_zibert("eval --json -m " + dir + "/m.safetensors --data " + dir + "/dev.tsv");
  REQUIRE(ev.status == 0);
  nlohmann::json e = nlohmann::json::parse(ev.out);
  CHECK(e["calibration"]["temperature"].get<double>() == t);
  CHECK(e["calibration"]["calibrated"]["nll"].get<double>() <= e["calibration"]["raw"]["nll"].get<double>());
  CHECK(e["calibration"]["raw"]["nll"].get<double>() == Approx(info["calibration"]["before"]["nll"].get<double>()));
  CHECK(e["calibration"]["probabilities"] == "calibrated");
  // --data - reads the same rows from standard input.
  RunResult piped = run_shell(ZIBERT_BIN " eval --json -m " + dir + "/m.safetensors --data - < " + dir + "/dev.tsv");
  REQUIRE(piped.status == 0);
  CHECK(piped.out == ev.out);
  RunResult table = run_zibert("eval -m " + dir + "/m.safetensors --data " + dir + "/dev.tsv");
  CHECK_THAT(table.out, Catch::Contains("calibration (15 bins)") && Catch::Contains("temperature"));
  nlohmann::json raw_eval =
      nlohmann::json::parse(run_zibert("eval --json --raw-probs -m " + dir + "/m.safetensors --data " + dir + "/dev.tsv").out);
  CHECK(raw_eval["calibration"]["probabilities"] == "raw");
  CHECK(raw_eval["accuracy"] == e["accuracy"]);  // tempering keeps every label at threshold 0.5

  // classify: the same labels, other probabilities; JSONL carries the log-odds.
  const std::string texts = "cut -f2 " + dir + "/dev.tsv | tail -n +2 | head -50 > " + dir + "/t.txt";
  REQUIRE(run_shell(texts).status == 0);
  RunResult cal = run_zibert("classify --format jsonl -m " + dir + "/m.safetensors " + dir + "/t.txt");
  RunResult raw = run_zibert("classify --format jsonl --raw-probs -m " + dir + "/m.safetensors " + dir + "/t.txt");
  REQUIRE(cal.status == 0);
  REQUIRE(raw.status == 0);
  std::vector<std::string> a = lines_of(cal.out), b = lines_of(raw.out);
  REQUIRE(a.size() == b.size());
  int differ = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    nlohmann::json x = nlohmann::json::parse(a[i]), y = nlohmann::json::parse(b[i]);
    CHECK(x["label"] == y["label"]);
    differ += x["prob"] != y["prob"];
    // The log-odds scale by 1/T (rounded to 4 decimals; probabilities of 1 aside).
    if (std::abs(y["logit"].get<double>()) < 20)
      CHECK(x["logit"].get<double>() == Approx(y["logit"].get<double>() / t).margin(2e-3));
  }
  CHECK(differ > 0);

  // plot --reliability: the diagram, raw and calibrated.
  r = run_zibert("plot --reliability -m " + dir + "/m.safetensors --data " + dir + "/dev.tsv --svg " + dir + "/r.svg");
  INFO(r.err);
  REQUIRE(r.status == 0);
  const std::string svg = read_text(dir + "/r.svg");
  CHECK_THAT(svg, Catch::StartsWith("<?xml") && Catch::Contains("class=\"bar\"") && Catch::Contains("class=\"diagonal\"") &&
                      Catch::Contains("calibrated (T = ") && Catch::Contains("ECE "));
  CHECK(run_zibert("plot --reliability -m " + dir + "/m.safetensors --svg " + dir + "/x.svg").status == 2);
  CHECK(run_zibert("plot log.jsonl --reliability --data " + dir + "/dev.tsv --svg " + dir + "/x.svg").status == 2);
  CHECK(run_zibert("plot --svg " + dir + "/x.svg").status == 2);

  // --no-calibration: a model without a temperature, which predicts raw.
  r = run_zibert("train --data " + dir + "/train.tsv --dev " + dir + "/dev.tsv --out " + dir + "/n.safetensors " +
                 common + " --no-calibration");
  REQUIRE(r.status == 0);
  CHECK(nlohmann::json::parse(run_zibert("info --json -m " + dir + "/n.safetensors").out)["calibration"].is_null());
  CHECK(run_zibert("classify --format jsonl -m " + dir + "/n.safetensors " + dir + "/t.txt").out == raw.out);
  CHECK_THAT(run_zibert("eval -m " + dir + "/n.safetensors --data " + dir + "/dev.tsv").out,
             Catch::Contains("no temperature"));

  // zibert calibrate on the same dev set: the temperature train fitted, the same model file.
  r = run_zibert("calibrate -m " + dir + "/n.safetensors --data " + dir + "/dev.tsv --out " + dir + "/n.safetensors");
  INFO(r.err);
  REQUIRE(r.status == 0);
  CHECK_THAT(r.err, Catch::Contains("temperature") && Catch::Contains("NLL"));
  CHECK(nlohmann::json::parse(run_zibert("info --json -m " + dir + "/n.safetensors").out)["calibration"]["temperature"]
            .get<double>() == t);
  CHECK(read_text(dir + "/n.safetensors") == read_text(dir + "/m.safetensors"));
  r = run_shell(ZIBERT_BIN " calibrate -m " + dir + "/n.safetensors --data - --out " + dir + "/p.safetensors < " + dir +
                "/dev.tsv");
  REQUIRE(r.status == 0);
  CHECK_THAT(r.err, Catch::Contains("examples of (standard input)"));
  CHECK(read_text(dir + "/p.safetensors") == read_text(dir + "/m.safetensors"));
  r = run_zibert("calibrate -m " + dir + "/n.safetensors --data " + dir + "/missing.tsv --out " + dir + "/x.safetensors");
  CHECK(r.status == 2);
}

TEST_CASE("train --label-smoothing bounds the training targets and is recorded, and 0 trains what it always did",
          "[calibration][cli]") {
  const std::string dir = temp_dir();
  REQUIRE(run_shell("python3 " ZIBERT_SOURCE_DIR "/tests/fixtures/toy_corpus.py " + dir + "/train.tsv 300 5 --pool 30 "
                    "--min-len 3 --max-len 12").status == 0);
  const std::string common = " --data " + dir + "/train.tsv -q --epochs 3 --dim 16 --heads 2 --ffn 32 --max-len 16 "
                             "--threads 1 --no-calibration --out " + dir;
  REQUIRE(run_zibert("train" + common + "/plain.safetensors").status == 0);
  REQUIRE(run_zibert("train --label-smoothing 0" + common + "/zero.safetensors").status == 0);
  CHECK(read_text(dir + "/zero.safetensors") == read_text(dir + "/plain.safetensors"));
  RunResult r = run_zibert("train --label-smoothing 0.1" + common + "/smooth.safetensors");
  INFO(r.err);
  REQUIRE(r.status == 0);
  const Model smooth = load_model(dir + "/smooth.safetensors");
  CHECK(smooth.training["label_smoothing"].get<double>() == 0.1);
  CHECK(smooth.net.params() != load_model(dir + "/plain.safetensors").net.params());
  CHECK(run_zibert("train --label-smoothing 0.6" + common + "/x.safetensors").status == 2);
}

namespace {

// Filler text around a marker: label a texts hold 红, label b texts 蓝, the
// outliers 绿 (neither colour the labels know).
std::string colour_text(zibert::Rng& r, const std::string& marker) {
  static const std::vector<std::string> filler{"今天", "我们", "觉得", "还是", "那家", "的", "花", "衣服", "很好看"};
  std::string out = filler[r.below(filler.size())] + filler[r.below(filler.size())];
  return out + marker + filler[r.below(filler.size())];
}

}  // namespace

TEST_CASE("train --outliers: texts of no label train towards the uniform distribution, recorded, resumed exactly",
          "[calibration][cli]") {
  const std::string dir = temp_dir();
  zibert::Rng r(5);
  std::string train, outliers;
  for (int i = 0; i < 200; ++i) train += i % 2 ? "a\t" + colour_text(r, "红") + "\n" : "b\t" + colour_text(r, "蓝") + "\n";
  for (int i = 0; i < 100; ++i) outliers += colour_text(r, "绿") + "\n";
  write_text(dir + "/train.tsv", train);
  write_text(dir + "/outliers.txt", outliers);
  write_text(dir + "/in.txt", "那家红衣服\n那家蓝衣服\n那家绿衣服\n我们还是绿的花\n");
  const std::string common = " --data " + dir + "/train.tsv -q --epochs 15 --dim 16 --heads 2 --ffn 32 --max-len 16 "
                             "--threads 1 --no-calibration --lr 1e-2 --out " + dir;
  RunResult t = run_zibert("train --outliers " + dir + "/outliers.txt" + common + "/oe.safetensors");
  INFO(t.err);
  REQUIRE(t.status == 0);
  const std::vector<std::string> out =
      lines_of(run_zibert("classify --format jsonl -m " + dir + "/oe.safetensors " + dir + "/in.txt").out);
  REQUIRE(out.size() == 4);
  auto p_a = [&](std::size_t i) { return nlohmann::json::parse(out[i])["probs"]["a"].get<double>(); };
  CHECK(p_a(0) > 0.95);  // the labels are learnt as before
  CHECK(p_a(1) < 0.05);
  CHECK(std::abs(p_a(2) - 0.5) < 0.1);  // texts like the outliers (not in the file) come out unsure
  CHECK(std::abs(p_a(3) - 0.5) < 0.1);
  // The same training without them: the unknown colour reads as one of the labels, and surely.
  REQUIRE(run_zibert("train" + common + "/plain.safetensors").status == 0);
  const std::string plain = run_zibert("classify --format jsonl -m " + dir + "/plain.safetensors " + dir + "/in.txt").out;
  CHECK(std::abs(nlohmann::json::parse(lines_of(plain)[2])["probs"]["a"].get<double>() - 0.5) > 0.3);
  const Model oe = load_model(dir + "/oe.safetensors");
  CHECK(oe.training["outliers"] == 100);
  CHECK(oe.training["train_examples"] == 180);  // the labelled rows less the 10 % held out
  CHECK_THAT(run_zibert("info -m " + dir + "/oe.safetensors").out,
             Catch::Contains("outliers    100 texts of no label (--outliers)"));

  SECTION("--resume continues with the outliers, byte-identical; a changed outlier file is refused") {
    interrupt_and_resume("--outliers " + dir + "/outliers.txt" + common + "/resumed.safetensors", dir + "/ck", 20);
    CHECK(read_text(dir + "/resumed.safetensors") == read_text(dir + "/oe.safetensors"));
    REQUIRE(run_zibert("train --outliers " + dir + "/outliers.txt --checkpoint " + dir + "/ck2 "
                       "--interrupt-at-step 20" + common + "/again.safetensors").status != 0);
    write_text(dir + "/outliers.txt", outliers + "那家绿的花\n");
    RunResult changed = run_zibert("train -q --resume " + dir + "/ck2");
    CHECK(changed.status == 2);
    CHECK_THAT(changed.err, Catch::Contains(dir + "/outliers.txt: changed since the checkpoint was written"));
  }
  SECTION("what --outliers cannot train is refused with exit 2, naming the file and line") {
    write_text(dir + "/bad.txt", "那家绿衣服\n\xff\xfe\n");
    RunResult bad = run_zibert("train --outliers " + dir + "/bad.txt" + common + "/x.safetensors");
    CHECK(bad.status == 2);
    CHECK_THAT(bad.err, Catch::Contains(dir + "/bad.txt:2:") && Catch::Contains("UTF-8"));
    RunResult multi = run_zibert("train --multi-label --outliers " + dir + "/outliers.txt" + common + "/x.safetensors");
    CHECK(multi.status == 2);
    CHECK_THAT(multi.err, Catch::Contains("--outliers") && Catch::Contains("multi-label"));
    CHECK(run_zibert("train --outliers " + dir + "/missing.txt" + common + "/x.safetensors").status == 2);
    CHECK_FALSE(std::ifstream(dir + "/x.safetensors").good());
  }
}

TEST_CASE("the shipped detector and its int8 twin are sure of no wrong answer on data/unseen-forms.tsv",
          "[calibration][shipped]") {
  // "The model must not be confidently wrong": Clear mentions (1)
  // and near misses (0) must be right and sure; no text of the file may be
  // wrong at P >= 0.99; the held-out spacings (unseen) must come out visibly
  // less sure than clear mentions on average, and the spacings the outliers
  // train towards 50/50 (outlier) unsure each.
  const std::string dir = temp_dir();
  std::vector<std::string> kinds;
  std::string texts;
  for (const std::string& line : lines_of(read_text(ZIBERT_SOURCE_DIR "/data/unseen-forms.tsv"))) {
    const auto tab = line.find('\t');
    REQUIRE(tab != std::string::npos);
    kinds.push_back(line.substr(0, tab));
    std::string text = line.substr(tab + 1);
    for (std::size_t u; (u = text.find("\\u")) != std::string::npos;) {
      const auto cp = std::stoul(text.substr(u + 2, 4), nullptr, 16);
      REQUIRE((cp >= 0x800 && cp < 0x10000));  // three UTF-8 bytes
      const char utf8[] = {char(0xE0 | (cp >> 12)), char(0x80 | ((cp >> 6) & 0x3F)), char(0x80 | (cp & 0x3F))};
      text.replace(u, 6, utf8, 3);
    }
    texts += text + "\n";
  }
  REQUIRE(kinds.size() >= 50);
  write_text(dir + "/forms.txt", texts);
  for (const char* model : {"fotiaoqiang.safetensors", "fotiaoqiang.int8.safetensors"}) {
    RunResult r = run_zibert(std::string("classify --format jsonl -m " ZIBERT_SOURCE_DIR "/models/") + model + " " +
                             dir + "/forms.txt");
    INFO(model << ": " << r.err);
    REQUIRE(r.status == 0);
    const std::vector<std::string> out = lines_of(r.out);
    REQUIRE(out.size() == kinds.size());
    std::map<std::string, std::vector<double>> p_by_kind;  // P of the answer
    for (std::size_t i = 0; i < out.size(); ++i) {
      const nlohmann::json j = nlohmann::json::parse(out[i]);
      const std::string label = j["label"];
      const double p = j["probs"][label];
      const std::string gold = kinds[i] == "near" ? "0" : "1";
      INFO(kinds[i] << " " << j["text"].get<std::string>() << ": " << label << " at " << p);
      CHECK(!(label != gold && p >= 0.99));
      if (kinds[i] == "clear" || kinds[i] == "near") CHECK((label == gold && p >= 0.99));
      if (kinds[i] == "outlier") CHECK(p < 0.9);
      p_by_kind[kinds[i]].push_back(p);
    }
    const auto mean = [](const std::vector<double>& v) {
      double s = 0;
      for (double p : v) s += p;
      return s / double(v.size());
    };
    REQUIRE(p_by_kind["unseen"].size() >= 20);
    CHECK(mean(p_by_kind["unseen"]) < mean(p_by_kind["clear"]) - 0.15);
  }
}
