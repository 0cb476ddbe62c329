// The zibert binary as a user runs it: classify, train, eval, info, errors.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <sstream>

#include "helpers.hpp"

using namespace zibert;
using namespace zibert::test;

namespace {

// A saved tiny model (random weights) for output-format tests.
const std::string& tiny_model_path() {
  static const std::string path = [] {
    std::string p = temp_dir() + "/tiny.safetensors";
    save_model(p, tiny_classifier(3));
    return p;
  }();
  return path;
}

std::string toy_corpus(const std::string& path, int count, int seed) {
  return "python3 " ZIBERT_SOURCE_DIR "/tests/fixtures/toy_corpus.py " + path + " " + std::to_string(count) + " " +
         std::to_string(seed) + " --pool 100 --min-len 5 --max-len 20";
}

}  // namespace

TEST_CASE("classify: one TSV line per input line and in order", "[cli][classify]") {
  std::string dir = temp_dir();
  write_text(dir + "/in.txt", "他们点了一坛佛跳墙\n\n狗急跳墙\r\na\tb\nlast line without newline");
  RunResult r = run_zibert("classify -m " + tiny_model_path() + " " + dir + "/in.txt");
  REQUIRE(r.status == 0);
  CHECK(r.err.empty());
  std::vector<std::string> out = lines_of(r.out);
  REQUIRE(out.size() == 5);
  std::vector<std::string> texts{"他们点了一坛佛跳墙", "", "狗急跳墙", "a\\tb", "last line without newline"};
  for (std::size_t i = 0; i < out.size(); ++i) {
    INFO(out[i]);
    CHECK_THAT(out[i], Catch::Matches("[01]\t[01]\\.[0-9]{4}\t.*"));
    CHECK(out[i].substr(out[i].find('\t', 2) + 1) == texts[i]);
  }
  SECTION("stdin, --no-text and jsonl") {
    RunResult s = run_shell("printf '佛跳墙\\n好\\n' | " ZIBERT_BIN " classify --no-text -m " + tiny_model_path());
    REQUIRE(s.status == 0);
    CHECK_THAT(s.out, Catch::Matches("[01]\t[01]\\.[0-9]{4}\n[01]\t[01]\\.[0-9]{4}\n"));
    RunResult j = run_shell("printf '佛\"跳\\\\墙\\n' | " ZIBERT_BIN " classify --format jsonl -m " + tiny_model_path() + " -");
    REQUIRE(j.status == 0);
    nlohmann::json row = nlohmann::json::parse(lines_of(j.out).at(0));
    CHECK(row["line"] == 1);
    CHECK(row["text"] == "佛\"跳\\墙");
    CHECK(row["probs"]["0"].get<double>() + row["probs"]["1"].get<double>() == Approx(1.0).margin(2e-4));
  }
}

TEST_CASE("classify: invalid UTF-8 names file and line and byte and --invalid replace carries on", "[cli][classify]") {
  std::string dir = temp_dir();
  write_text(dir + "/bad.txt", "佛跳墙\n好\xFF吃\n");
  RunResult r = run_zibert("classify -m " + tiny_model_path() + " " + dir + "/bad.txt");
  CHECK(r.status == 2);
  CHECK(r.err == "zibert: error: " + dir + "/bad.txt:2:4: invalid UTF-8 (--invalid replace carries on)\n");
  CHECK(lines_of(r.out).size() == 1);  // the good line before it was written
  RunResult ok = run_zibert("classify --invalid replace -m " + tiny_model_path() + " " + dir + "/bad.txt");
  CHECK(ok.status == 0);
  CHECK(lines_of(ok.out).size() == 2);
}

TEST_CASE("usage and file errors exit 2 with one error line", "[cli]") {
  struct Case {
    std::string args, prefix;
  };
  std::string dir = temp_dir();
  auto c = GENERATE_COPY(values<Case>({
      {"classify -m " + tiny_model_path() + " /nonexistent/x.txt", "zibert: error: /nonexistent/x.txt: No such file"},
      {"classify -m " + tiny_model_path() + " /tmp", "zibert: error: /tmp: is a directory"},
      {"classify -m /nonexistent/m.safetensors", "zibert: error: /nonexistent/m.safetensors: No such file"},
      {"classify --bogus", "zibert: error: The following argument was not expected: --bogus"},
      {"classify --threshold 2 -m " + tiny_model_path(), "zibert: error: --threshold: Value 2 not in range"},
      {"frobnicate", "zibert: error: unknown command 'frobnicate' (commands: train, pretrain, distill, classify, embed, tokenize, fill-mask, eval, info, import, export, quantize, calibrate, variants, synth, explain, plot, bench)"},
      {"train --data /nonexistent.tsv --out x.safetensors", "zibert: error: --data: File does not exist"},
  }));
  INFO(c.args);
  RunResult r = run_zibert(c.args);
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::StartsWith(c.prefix));
  CHECK(r.out.empty());
}

TEST_CASE("every floating-point option refuses nan (CLI11 Range lets it through)", "[cli][release-only]") {
  // Found from each command's --help, so an option added later is held to it too.
  std::size_t checked = 0;
  for (const char* cmd : {"train", "pretrain", "classify", "eval", "embed", "synth", "bench", "explain", "calibrate",
                          "quantize", "fill-mask", "plot", "variants", "info"}) {
    const RunResult help = run_zibert(std::string(cmd) + " --help");
    REQUIRE(help.status == 0);
    for (const std::string& line : lines_of(help.out)) {
      const std::size_t at = line.find("--"), type = line.find(" FLOAT");
      if (at == std::string::npos || type == std::string::npos || type < at) continue;
      const std::string option = line.substr(at, line.find_first_of(" ,", at) - at);
      INFO(cmd << " " << option);
      for (const char* value : {"nan", "NaN", "-nan"}) {
        const RunResult r = run_zibert(std::string(cmd) + " " + option + " " + value);
        CHECK(r.status == 2);
        CHECK(r.err == "zibert: error: " + option + ": Value " + value + " is not a number\n");
        CHECK(r.out.empty());
      }
      ++checked;
    }
  }
  CHECK(checked >= 19);  // --threshold twice, train's 8, pretrain's 6, synth's 2, bench's --seconds
}

TEST_CASE("no command writes over a file it reads", "[cli]") {
  const std::string dir = temp_dir(), d = dir + "/data.tsv", v = dir + "/dev.tsv", t = dir + "/text.txt";
  const std::string m = dir + "/model.safetensors";
  const std::string data = "1\t佛跳墙\n0\t狗急跳墙\n1\t一坛佛跳墙\n0\t仿佛\n";
  for (const std::string& path : {d, v}) write_text(path, data);
  write_text(t, "佛跳墙好吃\n");
  save_model(m, tiny_classifier(3));
  const std::string model_bytes = read_text(m);
  REQUIRE(run_shell("mkdir " + dir + "/s && cp " + d + " " + dir + "/s/train.tsv && ln " + d + " " + dir + "/link.tsv")
              .status == 0);
  struct Case {
    std::string args, error;
  };
  const std::string shape = " --epochs 1 --layers 1 --dim 16 --ffn 16 --heads 2";
  auto c = GENERATE_COPY(values<Case>({
      {"train --data " + d + " --out " + d + shape, d + ": --out would overwrite --data's file; give it"},
      {"train --data " + d + " --dev " + v + " --out " + dir + "/./dev.tsv" + shape,
       dir + "/./dev.tsv: --out would overwrite --dev's file (" + v + ")"},
      {"train --data " + d + " --out " + dir + "/link.tsv" + shape, "--out would overwrite --data's file"},
      {"train --data " + d + " --out " + dir + "/m2.safetensors --log " + d + shape, "--log would overwrite --data's"},
      {"train --data " + d + " --out " + dir + "/m2.safetensors --checkpoint " + d + shape,
       "the checkpoint would overwrite --data's"},
      {"train --data " + d + " --out " + dir + "/m2.safetensors --outliers " + t + " --log " + t + shape,
       "--log would overwrite --outliers's"},
      {"train --data " + d + " --out " + dir + "/m2.safetensors --log " + dir + "/m2.safetensors" + shape,
       "--log needs a path of its own (not --out's)"},
      {"pretrain --text " + t + " --out " + t + shape, t + ": --out would overwrite --text's file"},
      {"calibrate -m " + m + " --data " + d + " --out " + d, "--out would overwrite --data's file"},
      {"quantize -m " + m + " --out " + m, "--out would overwrite -m's file"},
      {"variants -m " + m + " --table " + t + " --out " + t, "--out would overwrite --table's file"},
      {"plot " + t + " --svg " + t, "--svg would overwrite the training log's file"},
      {"explain -m " + m + " --file " + t + " --svg " + t, "--svg would overwrite --file's file"},
      {"synth --phrase 佛跳墙 --corpus " + dir + "/s/train.tsv --out " + dir + "/s", "--out would overwrite --corpus's"},
  }));
  INFO(c.args);
  const RunResult r = run_zibert(c.args);
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::StartsWith("zibert: error: ") && Catch::Contains(c.error));
  CHECK(read_text(d) == data);
  CHECK(read_text(v) == data);
  CHECK(read_text(dir + "/s/train.tsv") == data);
  CHECK(read_text(t) == "佛跳墙好吃\n");
  CHECK(read_text(m) == model_bytes);
}

TEST_CASE("help and version", "[cli]") {
  RunResult v = run_zibert("--version");
  CHECK(v.status == 0);
  CHECK_THAT(v.out, Catch::StartsWith("zibert "));
  for (const char* cmd : {"train", "classify", "eval", "info", "synth", "explain", "plot"}) {
    RunResult h = run_zibert(std::string(cmd) + " --help");
    INFO(cmd);
    CHECK(h.status == 0);
    CHECK_THAT(h.out, Catch::Contains("Example"));
  }
}

TEST_CASE("train: data errors and output checks come before any training", "[cli][train]") {
  std::string dir = temp_dir();
  write_text(dir + "/one.tsv", "1\t佛跳墙\n1\t一坛佛跳墙\n1\t佛跳墙好吃\n");
  RunResult r = run_zibert("train --data " + dir + "/one.tsv --out " + dir + "/m.safetensors");
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::Contains("needs examples of at least two labels"));

  write_text(dir + "/ok.tsv", "1\t佛跳墙\n0\t狗急跳墙\n1\t一坛佛跳墙\n0\t仿佛\n");
  write_text(dir + "/dev.tsv", "1\t佛跳墙\nmaybe\t仿佛\n");
  r = run_zibert("train --data " + dir + "/ok.tsv --dev " + dir + "/dev.tsv --out " + dir + "/m.safetensors");
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::StartsWith("zibert: error: " + dir + "/dev.tsv:2: label \"maybe\""));

  r = run_zibert("train --data " + dir + "/ok.tsv --out " + dir + "/missing/m.safetensors");
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::Contains("does not exist"));
  CHECK_THAT(r.err, !Catch::Contains("epoch"));  // failed before training
}

TEST_CASE("train reads TSV and fastText and JSONL and info and eval describe the result", "[cli][train]") {
  std::string dir = temp_dir();
  auto fmt = GENERATE(as<std::string>{}, "tsv", "fasttext", "jsonl");
  std::string data;
  for (int i = 0; i < 40; ++i) {
    std::string label = i % 2 ? "yes" : "no";
    std::string text = i % 2 ? "他们点了佛跳墙" + std::to_string(i) : "狗急跳墙" + std::to_string(i);
    if (fmt == "tsv") data += (i == 0 ? "text\tlabel\n" : "") + text + "\t" + label + "\n";
    if (fmt == "fasttext") data += "__label__" + label + " " + text + "\n";
    if (fmt == "jsonl") data += nlohmann::json{{"text", text}, {"label", label}}.dump() + "\n";
  }
  write_text(dir + "/data", data);
  RunResult r = run_zibert("train --data " + dir + "/data --out " + dir + "/m.safetensors --epochs 2 --dim 16 "
                           "--heads 2 --ffn 32 --max-len 32 --threads 1");
  INFO(r.err);
  REQUIRE(r.status == 0);
  CHECK(r.out.empty());  // progress goes to stderr
  CHECK_THAT(r.err, Catch::Contains("training on 36 examples (" + fmt + "), dev 4"));
  RunResult info = run_zibert("info --json -m " + dir + "/m.safetensors");
  REQUIRE(info.status == 0);
  nlohmann::json j = nlohmann::json::parse(info.out);
  CHECK(j["labels"] == nlohmann::json({"no", "yes"}));
  CHECK(j["positive_label"] == "yes");
  CHECK(j["config"]["layers"] == 2);
  CHECK(j["training"]["train_examples"] == 36);
  RunResult text = run_zibert("info -m " + dir + "/m.safetensors");
  CHECK_THAT(text.out, Catch::Contains("parameters") && Catch::Contains("positive: yes"));
  RunResult ev = run_zibert("eval -m " + dir + "/m.safetensors --data " + dir + "/data");
  REQUIRE(ev.status == 0);
  CHECK_THAT(ev.out, Catch::Contains("accuracy") && Catch::Contains("confusion"));
}

TEST_CASE("the dev accuracy a model records is what eval says on the same file, long texts included", "[cli][train]") {
  std::string dir = temp_dir();
  // Short training texts, dev texts of 20 to 40 characters against a window
  // of 14: the phrase is often past the first window, where scoring texts
  // cut to the window (as zibert did before) got a different accuracy from
  // eval's (0.49 against 0.535 with these files and flags).
  REQUIRE(run_shell("python3 " ZIBERT_SOURCE_DIR "/tests/fixtures/toy_corpus.py " + dir + "/train.tsv 600 5 --pool 30 "
                    "--min-len 3 --max-len 12").status == 0);
  REQUIRE(run_shell("python3 " ZIBERT_SOURCE_DIR "/tests/fixtures/toy_corpus.py " + dir + "/dev.tsv 200 6 --pool 30 "
                    "--min-len 20 --max-len 40").status == 0);
  auto windows = GENERATE(as<std::string>{}, "mean", "max", "first");
  RunResult r = run_zibert("train --data " + dir + "/train.tsv --dev " + dir + "/dev.tsv --out " + dir +
                           "/m.safetensors --epochs 8 --lr 3e-3 --dim 16 --heads 2 --ffn 32 --max-len 16 "
                           "--threads 2 -q --windows " + windows);
  INFO(r.err);
  REQUIRE(r.status == 0);
  nlohmann::json info = nlohmann::json::parse(run_zibert("info --json -m " + dir + "/m.safetensors").out);
  CHECK(info["windows"] == windows);
  CHECK(info["windows_recorded"] == true);
  RunResult ev = run_zibert("eval --json -m " + dir + "/m.safetensors --data " + dir + "/dev.tsv");
  REQUIRE(ev.status == 0);
  nlohmann::json metrics = nlohmann::json::parse(ev.out);
  CHECK(info["training"]["dev_accuracy"].get<double>() == metrics["accuracy"].get<double>());
  CHECK(info["training"]["dev_macro_f1"].get<double>() == metrics["macro_f1"].get<double>());
  const nlohmann::json& best = info["training"]["history"][info["training"]["best_epoch"].get<int>() - 1];
  CHECK(best["dev_accuracy"] == info["training"]["dev_accuracy"]);
}

TEST_CASE("train --windows is checked, and a model without it combines as before", "[cli][train]") {
  std::string dir = temp_dir();
  REQUIRE(run_shell(toy_corpus(dir + "/train.tsv", 40, 4)).status == 0);
  RunResult bad = run_zibert("train --data " + dir + "/train.tsv --out " + dir + "/m.safetensors --windows all");
  CHECK(bad.status == 2);
  CHECK_THAT(bad.err, Catch::Contains("--windows"));
  RunResult info = run_zibert("info --json -m " + tiny_model_path());
  nlohmann::json j = nlohmann::json::parse(info.out);
  CHECK(j["windows"] == "max");  // binary with a positive label, and nothing recorded
  CHECK(j["windows_recorded"] == false);
}

TEST_CASE("the same data and flags and seed and threads give a byte-identical model", "[cli][train]") {
  std::string dir = temp_dir();
  REQUIRE(run_shell(toy_corpus(dir + "/train.tsv", 300, 4)).status == 0);
  std::string flags = " --epochs 2 --dim 16 --heads 2 --ffn 32 --max-len 32 --threads 2 --dropout 0.1 -q";
  REQUIRE(run_zibert("train --seed 7 --data " + dir + "/train.tsv --out " + dir + "/a.safetensors" + flags).status == 0);
  REQUIRE(run_zibert("train --seed 7 --data " + dir + "/train.tsv --out " + dir + "/b.safetensors" + flags).status == 0);
  REQUIRE(run_zibert("train --seed 8 --data " + dir + "/train.tsv --out " + dir + "/c.safetensors" + flags).status == 0);
  std::string a = read_text(dir + "/a.safetensors");
  CHECK(a.size() > 1000);
  CHECK(a == read_text(dir + "/b.safetensors"));
  CHECK(a != read_text(dir + "/c.safetensors"));
}

TEST_CASE("train --data - reads the training data from stdin, the same model as from the file", "[cli][train]") {
  std::string dir = temp_dir();
  REQUIRE(run_shell(toy_corpus(dir + "/train.tsv", 300, 4)).status == 0);
  std::string flags = " --epochs 2 --dim 16 --heads 2 --ffn 32 --max-len 32 --threads 2 -q";
  REQUIRE(run_zibert("train --data " + dir + "/train.tsv --out " + dir + "/a.safetensors" + flags).status == 0);
  RunResult r = run_shell("cat " + dir + "/train.tsv | " ZIBERT_BIN " train --data - --out " + dir + "/b.safetensors" + flags);
  INFO(r.err);
  REQUIRE(r.status == 0);
  const std::string texts = "cut -f2 " + dir + "/train.tsv | head -40 > " + dir + "/t.txt";
  REQUIRE(run_shell(texts).status == 0);
  RunResult a = run_zibert("classify --format jsonl -m " + dir + "/a.safetensors " + dir + "/t.txt");
  RunResult b = run_zibert("classify --format jsonl -m " + dir + "/b.safetensors " + dir + "/t.txt");
  REQUIRE(a.status == 0);
  CHECK(a.out == b.out);
  CHECK_THAT(run_zibert("info -m " + dir + "/b.safetensors").out, Catch::Contains("trained on  (standard input)"));
  // A bad line on stdin is named as stdin's.
  r = run_shell("printf 'text\\tlabel\\nok\\t1\\nbroken\\n' | " ZIBERT_BIN " train --data - --out " + dir + "/c.safetensors");
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::Contains("(standard input):3:"));
}

TEST_CASE("two attention layers tell 佛跳墙 from 佛 跳 墙 scattered (DESIGN §0)", "[cli][e2e]") {
  std::string dir = temp_dir();
  REQUIRE(run_shell(toy_corpus(dir + "/train.tsv", 2000, 1)).status == 0);
  REQUIRE(run_shell(toy_corpus(dir + "/test.tsv", 500, 2)).status == 0);
  // The phrase is learnt late: 3, 5 and 10 epochs of this schedule reach 0.50, 0.52 and 0.62 accuracy (8: 0.77),
  // 30 pass the checks below. The sanitizers, some twenty times slower, run 3 epochs of the same shape for their
  // memory and UB checks; the accuracy is the Release build's to show.
#ifdef ZIBERT_SANITIZED
  const std::string epochs = "3";
#else
  const std::string epochs = "30";
#endif
  RunResult t = run_zibert("train --data " + dir + "/train.tsv --out " + dir + "/m.safetensors --layers 2 --heads 4 "
                           "--dim 32 --ffn 64 --max-len 32 --epochs " + epochs + " --lr 2e-3 --seed 1");
  INFO(t.err);
  REQUIRE(t.status == 0);
  RunResult e = run_zibert("eval --json -m " + dir + "/m.safetensors --data " + dir + "/test.tsv");
  REQUIRE(e.status == 0);
  nlohmann::json m = nlohmann::json::parse(e.out);
  INFO(e.out);
  CHECK(m["examples"] == 500);
  CHECK(m["categories"]["scattered"]["examples"] == 250);
  CHECK(m["categories"]["contiguous"]["examples"] == 250);
#ifndef ZIBERT_SANITIZED
  CHECK(m["accuracy"].get<double>() >= 0.97);
  CHECK(m["categories"]["scattered"]["accuracy"].get<double>() >= 0.95);
  CHECK(m["categories"]["contiguous"]["accuracy"].get<double>() >= 0.95);
#endif
}

TEST_CASE("train --init continues from a model's weights and vocabulary", "[cli][train]") {
  std::string dir = temp_dir();
  REQUIRE(run_shell(toy_corpus(dir + "/train.tsv", 200, 5)).status == 0);
  std::string flags = " --epochs 1 --dim 16 --heads 2 --ffn 32 --max-len 32 --threads 1 -q";
  REQUIRE(run_zibert("train --data " + dir + "/train.tsv --out " + dir + "/a.safetensors" + flags).status == 0);
  RunResult r = run_zibert("train --init " + dir + "/a.safetensors --data " + dir + "/train.tsv --out " + dir +
                           "/b.safetensors --epochs 1 -q");
  INFO(r.err);
  REQUIRE(r.status == 0);
  nlohmann::json a = nlohmann::json::parse(run_zibert("info --json -m " + dir + "/a.safetensors").out);
  nlohmann::json b = nlohmann::json::parse(run_zibert("info --json -m " + dir + "/b.safetensors").out);
  CHECK(b["config"] == a["config"]);  // the shape comes from the initial model
  CHECK(b["training"]["init"] == true);
  CHECK(read_text(dir + "/a.safetensors") != read_text(dir + "/b.safetensors"));

  r = run_zibert("train --init " + dir + "/a.safetensors --data " + dir + "/train.tsv --out " + dir +
                 "/c.safetensors --dim 64");
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::StartsWith("zibert: error: --init excludes --dim"));
  // Flags --init's model decides for itself are refused, not ignored: its vocabulary (--min-count matters with
  // --extend-vocab alone) and its normalisation; and --holdout does nothing once --dev is given.
  const std::pair<std::string, std::string> ignored[] = {
      {" --min-count 3", "zibert: error: --min-count: --init's model brings its vocabulary"},
      {" --lowercase", "zibert: error: --init excludes --lowercase"},
      {" --dev " + dir + "/train.tsv --holdout 0.2", "zibert: error: --dev excludes --holdout"},
  };
  for (const auto& [flags, message] : ignored) {
    r = run_zibert("train --init " + dir + "/a.safetensors --data " + dir + "/train.tsv --out " + dir +
                   "/c.safetensors --epochs 1 -q" + flags);
    INFO(flags);
    CHECK(r.status == 2);
    CHECK_THAT(r.err, Catch::StartsWith(message));
  }

  write_text(dir + "/new.tsv", "1\t佛跳墙\n0\t仿佛\n2\t新标签\n");
  r = run_zibert("train --init " + dir + "/a.safetensors --data " + dir + "/new.tsv --out " + dir + "/c.safetensors");
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::StartsWith("zibert: error: " + dir + "/new.tsv") && Catch::Contains("label \"2\""));
}

TEST_CASE("train --init --extend-vocab gives new characters rows of their own, and says how many", "[cli][train]") {
  std::string dir = temp_dir();
  write_text(dir + "/a.tsv", "text\tlabel\n甲乙丙\t1\n丙乙甲\t0\n甲乙丙丙\t1\n乙甲丙\t0\n");
  // Two characters (丁, 戊) the first model never saw, 丁 four times and 戊 once.
  write_text(dir + "/b.tsv", "text\tlabel\n甲乙丁\t1\n丁乙甲\t0\n甲乙丁丁\t1\n乙甲戊\t0\n");
  write_text(dir + "/dev.tsv", "text\tlabel\n甲乙丙\t1\n丙甲乙\t0\n");
  const std::string dev = " --dev " + dir + "/dev.tsv";
  const std::string flags = " --epochs 1 --dim 16 --heads 2 --ffn 32 --max-len 16 --threads 1" + dev;
  REQUIRE(run_zibert("train --data " + dir + "/a.tsv --out " + dir + "/a.safetensors -q" + flags).status == 0);
  const auto vocab = [&](const std::string& m) {
    return nlohmann::json::parse(run_zibert("info --json -m " + dir + "/" + m).out)["config"]["vocab_size"].get<int>();
  };
  RunResult r = run_zibert("train --init " + dir + "/a.safetensors --data " + dir + "/b.tsv --out " + dir +
                           "/plain.safetensors --epochs 1" + dev + "");
  REQUIRE(r.status == 0);
  CHECK_THAT(r.err, Catch::Contains("read as [UNK]; --extend-vocab gives them rows"));
  CHECK(vocab("plain.safetensors") == vocab("a.safetensors"));
  r = run_zibert("train --init " + dir + "/a.safetensors --data " + dir + "/b.tsv --out " + dir +
                 "/ext.safetensors --epochs 1" + dev + " --extend-vocab");
  INFO(r.err);
  REQUIRE(r.status == 0);
  CHECK_THAT(r.err, Catch::Contains("--extend-vocab: ") && Catch::Contains(" characters new to the starting model"));
  const int added = vocab("ext.safetensors") - vocab("a.safetensors");
  CHECK(added >= 1);
  CHECK(nlohmann::json::parse(run_zibert("info --json -m " + dir + "/ext.safetensors").out)["training"]["vocab_added"] ==
        added);
  // --min-count 2 leaves out 戊 (seen once), which then reads as [UNK] and is said so.
  r = run_zibert("train --init " + dir + "/a.safetensors --data " + dir + "/b.tsv --out " + dir +
                 "/two.safetensors --epochs 1" + dev + " --extend-vocab --min-count 2");
  REQUIRE(r.status == 0);
  CHECK(vocab("two.safetensors") < vocab("ext.safetensors"));
  r = run_zibert("train --data " + dir + "/b.tsv --out " + dir + "/x.safetensors --extend-vocab" + flags);
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::Contains("--extend-vocab extends --init's vocabulary"));
}

TEST_CASE("the shipped 佛跳墙 model is the default and right on data/demo.tsv", "[cli][shipped]") {
  // No -m: the default model is found in the source tree's models/.
  RunResult e = run_shell("cd / && env -u ZIBERT_MODEL " ZIBERT_BIN " eval --json --data " ZIBERT_SOURCE_DIR
                          "/data/demo.tsv");
  INFO(e.err);
  REQUIRE(e.status == 0);
  nlohmann::json m = nlohmann::json::parse(e.out);
  CHECK(m["examples"] == 40);
  CHECK(m["accuracy"].get<double>() == 1.0);
  RunResult c = run_shell("printf '他们点了一坛佛跳墙\\n狗急跳墙\\n' | env -u ZIBERT_MODEL " ZIBERT_BIN " classify --no-text");
  CHECK(c.status == 0);
  CHECK_THAT(c.out, Catch::Matches("1\t[01]\\.[0-9]{4}\n0\t[01]\\.[0-9]{4}\n"));
}
