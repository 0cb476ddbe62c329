// zibert classify as a shell tool: alignment, formats, grep-like
// filtering, long texts, bad input, pipes, streaming, installation.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <sstream>

#include "helpers.hpp"
#include "zibert/model/safetensors.hpp"

using namespace zibert;
using namespace zibert::test;

namespace {

// The shipped 佛跳墙 detector, named by $ZIBERT_MODEL: these tests hold the
// grep-like behaviour, whose stderr says nothing of which model it used.
const std::string kZ = std::string("env ZIBERT_MODEL=" ZIBERT_SOURCE_DIR "/models/fotiaoqiang.safetensors ") + ZIBERT_BIN;

std::string repeat(const std::string& s, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += s;
  return out;
}

// 10 filler characters of a plain sentence, no 佛, 跳 or 墙.
const std::string kFiller = "今天的午饭是番茄炒蛋";

}  // namespace

TEST_CASE("classify keeps one record per input line (checked with paste)", "[classify]") {
  std::string dir = temp_dir();
  write_text(dir + "/in.txt", "\xEF\xBB\xBF他们点了一坛佛跳墙\r\n\r\n狗急跳墙\n\n\n佛跳牆年菜\r\n最后一行没有换行");
  RunResult r = run_shell(kZ + " classify --no-text " + dir + "/in.txt | paste - " + dir + "/in.txt");
  REQUIRE(r.status == 0);
  std::vector<std::string> rows = lines_of(r.out);
  REQUIRE(rows.size() == 7);
  CHECK(rows[0].starts_with("1\t"));
  CHECK(rows[2].starts_with("0\t"));
  CHECK(rows[5].starts_with("1\t"));
  CHECK(rows[6].ends_with("最后一行没有换行"));
  for (const auto& row : rows) CHECK_THAT(row.substr(0, 9), Catch::Matches("[01]\t[01]\\.[0-9]{4}\t"));
}

TEST_CASE("JSONL output parses with Python and keeps quotes backslashes tabs and controls", "[classify]") {
  std::string dir = temp_dir();
  std::string text = "他说\"佛跳墙\"\\很好\t吃\x01了";
  write_text(dir + "/in.txt", text + "\n第二行\n");
  RunResult r = run_shell(kZ + " classify --format jsonl " + dir +
                          "/in.txt | python3 -c 'import json,sys; rows=[json.loads(l) for l in sys.stdin]; "
                          "print(json.dumps([r[\"text\"] for r in rows])); print(rows[0][\"label\"], rows[0][\"line\"], "
                          "sorted(rows[0][\"probs\"]))'");
  REQUIRE(r.status == 0);
  std::vector<std::string> out = lines_of(r.out);
  REQUIRE(out.size() == 2);
  CHECK(nlohmann::json::parse(out[0]) == nlohmann::json({text, "第二行"}));
  CHECK(out[1] == "1 1 ['0', '1']");
  SECTION("TSV escapes tabs so a row keeps three columns") {
    RunResult t = run_shell(kZ + " classify " + dir + "/in.txt | awk -F'\\t' '{print NF}'");
    CHECK(t.out == "3\n3\n");
  }
}

TEST_CASE("filter mode prints matching lines unchanged like grep with -n -c -q -H -h and --label", "[classify]") {
  std::string dir = temp_dir();
  write_text(dir + "/a.txt", "他们点了一坛佛跳墙\n狗急跳墙\n\n佛跳牆年菜 \t原样\n");
  write_text(dir + "/b.txt", "今天吃什么\n");
  RunResult r = run_shell(kZ + " classify --filter " + dir + "/a.txt");
  CHECK(r.status == 0);
  CHECK(r.out == "他们点了一坛佛跳墙\n佛跳牆年菜 \t原样\n");
  r = run_shell(kZ + " classify --filter -n " + dir + "/a.txt " + dir + "/b.txt");
  CHECK(r.out == dir + "/a.txt:1:他们点了一坛佛跳墙\n" + dir + "/a.txt:4:佛跳牆年菜 \t原样\n");
  r = run_shell("cd " + dir + " && " + kZ + " classify --filter -h a.txt b.txt");
  CHECK(r.out == "他们点了一坛佛跳墙\n佛跳牆年菜 \t原样\n");
  r = run_shell("cd " + dir + " && " + kZ + " classify --filter -H a.txt");
  CHECK(r.out == "a.txt:他们点了一坛佛跳墙\na.txt:佛跳牆年菜 \t原样\n");
  r = run_shell("cd " + dir + " && " + kZ + " classify -c a.txt b.txt");
  CHECK(r.out == "a.txt:2\nb.txt:0\n");
  CHECK(r.status == 0);
  r = run_shell("cd " + dir + " && " + kZ + " classify --filter --label 0 b.txt");
  CHECK(r.out == "今天吃什么\n");
  r = run_shell("cd " + dir + " && " + kZ + " classify --filter b.txt");
  CHECK(r.status == 1);
  CHECK(r.out.empty());
  r = run_shell("cd " + dir + " && if " + kZ + " classify --filter -q a.txt; then echo yes; fi");
  CHECK(r.out == "yes\n");
  r = run_shell("cd " + dir + " && " + kZ + " classify -q b.txt");
  CHECK(r.status == 1);
  CHECK(r.out.empty());
  r = run_shell("cd " + dir + " && " + kZ + " classify --filter --label maybe a.txt");
  CHECK(r.status == 2);
  CHECK(r.err == "zibert: error: --label maybe is not one of the model's labels\n");
  SECTION("--filter takes no argument: the next word is an input file") {
    RunResult f = run_shell("cd " + dir + " && " + kZ + " classify --filter a.txt");
    CHECK(lines_of(f.out).size() == 2);
  }
}

TEST_CASE("classify -v inverts the match, -n numbers every record, JSONL filters keep records, and a flag that would do "
          "nothing is refused", "[classify]") {
  std::string dir = temp_dir();
  write_text(dir + "/a.txt", "他们点了一坛佛跳墙\n狗急跳墙\n\n佛跳牆年菜\n");
  RunResult r = run_shell("cd " + dir + " && " + kZ + " classify --filter -v -n a.txt");
  CHECK(r.status == 0);
  CHECK(r.out == "2:狗急跳墙\n3:\n");
  r = run_shell("cd " + dir + " && " + kZ + " classify -c --invert-match a.txt");
  CHECK(r.out == "2\n");
  // -n without --filter: a first column of line numbers (after -H's file column).
  r = run_shell("cd " + dir + " && " + kZ + " classify -n --no-text a.txt");
  std::vector<std::string> rows = lines_of(r.out);
  REQUIRE(rows.size() == 4);
  CHECK_THAT(rows[0], Catch::Matches("1\t1\t[01]\\.[0-9]{4}"));
  CHECK_THAT(rows[1], Catch::Matches("2\t0\t[01]\\.[0-9]{4}"));
  r = run_shell("cd " + dir + " && " + kZ + " classify -n -H a.txt");
  CHECK(lines_of(r.out)[3].starts_with("a.txt\t4\t1\t"));
  // --format jsonl --filter: the matching lines' records, with their line numbers.
  r = run_shell("cd " + dir + " && " + kZ + " classify --format jsonl --filter a.txt");
  rows = lines_of(r.out);
  REQUIRE(rows.size() == 2);
  CHECK(nlohmann::json::parse(rows[0])["line"] == 1);
  CHECK(nlohmann::json::parse(rows[1])["line"] == 4);
  CHECK(nlohmann::json::parse(rows[1])["text"] == "佛跳牆年菜");
  CHECK(nlohmann::json::parse(rows[1])["logit"].get<double>() > 0);
  r = run_shell("cd " + dir + " && " + kZ + " classify --format jsonl --filter -v --no-text a.txt");
  rows = lines_of(r.out);
  REQUIRE(rows.size() == 2);
  CHECK(!nlohmann::json::parse(rows[0]).contains("text"));
  CHECK(nlohmann::json::parse(rows[0])["label"] == "0");
  // --document --format jsonl --filter: the matching files' records.
  r = run_shell("cd " + dir + " && " + kZ + " classify --document --format jsonl --filter a.txt");
  CHECK(nlohmann::json::parse(r.out)["file"] == "a.txt");

  const std::pair<const char*, const char*> refused[] = {
      {"-v a.txt", "-v/--invert-match inverts what --filter, -c or -q match"},
      {"--label 1 a.txt", "--label chooses what --filter, -c and -q match"},
      {"-c -q a.txt", "-c/--count and -q/--quiet"},
      {"--format jsonl -c a.txt", "--format jsonl: -c and -q print counts or nothing"},
      {"-H -q a.txt", "-H/--with-filename: -q prints nothing"},
      {"-n -c a.txt", "-n/--line-number: -c and -q print no lines"},
      {"-n --document a.txt", "-n/--line-number: --document classifies whole files"},
      {"--no-text --document a.txt", "--no-text: --document prints no text already"},
      {"--no-text --filter a.txt", "--no-text: --filter prints the matching lines themselves"},
      {"--no-text -c a.txt", "--no-text: -c and -q print no text already"},
      {"--no-text -q a.txt", "--no-text: -c and -q print no text already"},
      {"--line-offset 5 --document a.txt", "--line-offset numbers the lines of a block"},
      {"--line-offset 0 --document a.txt", "--line-offset numbers the lines of a block"},
      {"-H -h a.txt", "excludes"},
  };
  for (const auto& [flags, message] : refused) {
    r = run_shell("cd " + dir + " && " + kZ + " classify " + flags);
    INFO(flags << ": " << r.err);
    CHECK(r.status == 2);
    CHECK(r.out.empty());
    CHECK_THAT(r.err, Catch::Contains(message));
  }
}

TEST_CASE("classify -k lists the top labels and a multi-class --threshold the labels that reach it, as fastText's "
          "predict-prob", "[classify]") {
  std::string dir = temp_dir();
  std::string data = "text\tlabel\n";
  const char* words[] = {"苹果香蕉", "汽车火车", "足球篮球"};
  const char* names[] = {"fruit", "vehicle", "sport"};
  for (int i = 0; i < 150; ++i) data += std::string(words[i % 3]) + std::to_string(i % 7) + "\t" + names[i % 3] + "\n";
  write_text(dir + "/train.tsv", data);
  RunResult r = run_zibert("train --data " + dir + "/train.tsv --out " + dir + "/m.safetensors --epochs 12 --lr 5e-3 "
                           "--dim 16 --heads 2 --ffn 32 --max-len 16 --threads 2 -q --no-calibration");
  INFO(r.err);
  REQUIRE(r.status == 0);
  write_text(dir + "/t.txt", "苹果香蕉3\n汽车火车1\n");
  const std::string m = " -m " + dir + "/m.safetensors ";
  r = run_zibert("classify -k 2 --no-text" + m + dir + "/t.txt");
  std::vector<std::string> rows = lines_of(r.out);
  REQUIRE(rows.size() == 2);
  CHECK_THAT(rows[0], Catch::Matches("fruit\t[01]\\.[0-9]{4}\t[a-z]+\t[01]\\.[0-9]{4}"));
  CHECK_THAT(rows[1], Catch::StartsWith("vehicle\t"));
  r = run_zibert("classify -k 5 --format jsonl" + m + dir + "/t.txt");  // k past the labels: all three
  nlohmann::json j = nlohmann::json::parse(lines_of(r.out)[0]);
  REQUIRE(j["top"].size() == 3);
  CHECK(j["top"][0]["label"] == "fruit");
  CHECK(j["top"][0]["prob"].get<double>() >= j["top"][1]["prob"].get<double>());
  CHECK(j["top"][1]["prob"].get<double>() >= j["top"][2]["prob"].get<double>());
  r = run_zibert("classify -k 5 --no-text" + m + dir + "/t.txt");  // TSV: three pairs, no empty ones
  CHECK_THAT(lines_of(r.out)[0],
             Catch::Matches("fruit\t[01]\\.[0-9]{4}\t[a-z]+\t[01]\\.[0-9]{4}\t[a-z]+\t[01]\\.[0-9]{4}"));
  // A threshold no label reaches: empty pairs in TSV, null in JSONL; one reached by the best only.
  r = run_zibert("classify --threshold 1 -k 2 --no-text" + m + dir + "/t.txt");
  CHECK(lines_of(r.out)[0] == "\t\t\t");  // two empty label<TAB>prob pairs
  r = run_zibert("classify --threshold 1 --format jsonl" + m + dir + "/t.txt");
  j = nlohmann::json::parse(lines_of(r.out)[0]);
  CHECK(j["label"].is_null());
  CHECK(j["top"].empty());
  RunResult plain = run_zibert("classify --format jsonl" + m + dir + "/t.txt");
  const double best = nlohmann::json::parse(lines_of(plain.out)[0])["prob"].get<double>();
  char thr[32];
  std::snprintf(thr, sizeof thr, "%.4f", best - 0.0001);
  r = run_zibert("classify -k 3 --format jsonl --threshold " + std::string(thr) + m + dir + "/t.txt");
  j = nlohmann::json::parse(lines_of(r.out)[0]);
  CHECK(j["top"].size() >= 1);
  CHECK(j["label"] == "fruit");
  // Where -k or a multi-class threshold would do nothing: refused.
  for (const char* flags : {"-k 2 --filter --label fruit", "-k 2 -c --label fruit", "--threshold 0.3 -c --label fruit"}) {
    r = run_zibert(std::string("classify ") + flags + m + dir + "/t.txt");
    INFO(flags << ": " << r.err);
    CHECK(r.status == 2);
  }
  CHECK(run_zibert("classify -k 2 --format jsonl --filter --label fruit" + m + dir + "/t.txt").status == 0);
  r = run_zibert("eval --threshold 0.3" + m + "--data " + dir + "/train.tsv");
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::Contains("--threshold decides a binary model's positive label"));
}

TEST_CASE("classify embed and eval show progress on a terminal (a pseudo-terminal here) and elsewhere only with "
          "--progress", "[classify]") {
  // Enough lines to take a while (sanitized, zibert runs some twenty times slower).
#ifdef ZIBERT_SANITIZED
  constexpr int kLines = 800, kTexts = 180;  // some 3 s a run: progress shows every 200 ms on a terminal
#else
  constexpr int kLines = 40000, kTexts = 9000;
#endif
  std::string dir = temp_dir();
  std::string text;
  for (int i = 0; i < kLines; ++i) text += i % 3 ? "今天的午饭是番茄炒蛋，味道不错\n" : "他们点了一坛佛跳墙\n";
  write_text(dir + "/big.txt", text);
  // script(1) runs the command on a pseudo-terminal: stderr is a terminal there.
  auto on_tty = [&](const std::string& command) {
    return run_shell("script -qec '" + command + " > /dev/null' /dev/null");
  };
  RunResult r = on_tty(std::string(ZIBERT_BIN) + " classify --threads 1 " + dir + "/big.txt");
  REQUIRE(r.status == 0);
  CHECK_THAT(r.out, Catch::Contains(dir + "/big.txt: ") && Catch::Contains(" MB of ") && Catch::Contains("lines/s") &&
                        Catch::Contains("ETA"));
  CHECK_THAT(r.out, Catch::EndsWith("\r\033[K"));  // cleared at the end
  r = on_tty("cat " + dir + "/big.txt | " + std::string(ZIBERT_BIN) + " classify --threads 1");  // unknown size
  CHECK_THAT(r.out, Catch::Contains("(standard input): ") && Catch::Contains("lines/s"));
  CHECK_THAT(r.out, !Catch::Contains("ETA"));
  r = on_tty(std::string(ZIBERT_BIN) + " embed --threads 1 " + dir + "/big.txt");
  CHECK_THAT(r.out, Catch::Contains("lines/s"));
  // Not a terminal: nothing, unless forced, then plain lines and a last one.
  r = run_shell(kZ + " classify --threads 1 " + dir + "/big.txt > /dev/null");
  CHECK(r.err.empty());
  r = run_shell(kZ + " classify --threads 1 --progress " + dir + "/big.txt > /dev/null");
  CHECK_THAT(r.err, Catch::Contains(std::to_string(kLines) + " lines") && Catch::EndsWith(", done\n"));
  CHECK_THAT(r.err, !Catch::Contains("\r"));
  // eval counts texts: done of total.
  write_text(dir + "/big.tsv", "text\tlabel\n" + std::string([&] {
               std::string rows;
               for (int i = 0; i < kTexts; ++i) rows += i % 2 ? "他们点了一坛佛跳墙\t1\n" : "今天的午饭是番茄炒蛋\t0\n";
               return rows;
             }()));
  r = run_shell(kZ + " eval --threads 1 --progress --data " + dir + "/big.tsv > /dev/null");
  CHECK_THAT(r.err, Catch::Contains(std::to_string(kTexts) + " of " + std::to_string(kTexts) + " texts (100 %)") &&
                        Catch::EndsWith(", done\n"));
  r = run_shell(kZ + " eval --threads 1 --data " + dir + "/big.tsv > /dev/null");
  CHECK(r.err.empty());
}

TEST_CASE("zibert with no command lists the commands with an example each", "[classify][cli]") {
  RunResult r = run_shell(kZ);
  CHECK(r.status == 2);
  for (const char* name : {"classify", "train", "eval", "pretrain", "embed", "fill-mask", "info", "quantize", "calibrate", "synth",
                           "explain", "plot", "bench"})
    CHECK_THAT(r.err, Catch::Contains(std::string("  ") + name + " ") && Catch::Contains(std::string("zibert ") + name));
  CHECK_THAT(r.err, Catch::Contains("zibert COMMAND --help"));
}

TEST_CASE("long lines are windowed not truncated: 佛跳墙 at character 5000 of 10000", "[classify]") {
  std::string dir = temp_dir();
  std::string left = repeat(kFiller, 500), right = repeat(kFiller, 499) + "今天的午饭";
  write_text(dir + "/long.txt", left + "佛跳墙" + right + "\n" + left + right + "\n");
  RunResult r = run_shell(kZ + " classify --no-text " + dir + "/long.txt");
  REQUIRE(r.status == 0);
  std::vector<std::string> out = lines_of(r.out);
  REQUIRE(out.size() == 2);
  CHECK(out[0].starts_with("1\t"));
  CHECK(out[1].starts_with("0\t"));
}

TEST_CASE("document mode treats a 1 MB file as one text and reports the deciding window", "[classify]") {
  std::string dir = temp_dir();
  std::string lines;
#ifdef ZIBERT_SANITIZED
  const std::size_t size = 15000;  // the sanitizers make a megabyte take minutes; 15 kB (dozens of windows) checks the same code
#else
  const std::size_t size = 1000000;
#endif
  while (lines.size() < size) lines += kFiller + "。\n";
  std::string pos = lines.substr(0, size * 6 / 10);
  std::size_t cut = pos.rfind('\n') + 1;
  std::string with = lines.substr(0, cut) + "年夜饭的压轴菜是佛跳墙。\n" + lines.substr(cut);
  write_text(dir + "/menu.txt", with);
  write_text(dir + "/plain.txt", lines);
  RunResult r = run_shell(kZ + " classify --document --format jsonl " + dir + "/menu.txt " + dir + "/plain.txt");
  REQUIRE(r.status == 0);
  std::vector<std::string> out = lines_of(r.out);
  REQUIRE(out.size() == 2);
  nlohmann::json a = nlohmann::json::parse(out[0]), b = nlohmann::json::parse(out[1]);
  CHECK(a["label"] == "1");
  CHECK(b["label"] == "0");
  // Characters before the mention: 11 per filler line plus one space per joined line.
  std::int64_t before = static_cast<std::int64_t>(cut / (kFiller.size() + 4)) * 12 + 8;
  std::int64_t offset = a["offset"];
  CHECK(offset <= before);
  CHECK(before + 3 <= offset + 126);
  RunResult f = run_shell("cd " + dir + " && " + kZ + " classify --document --filter menu.txt plain.txt");
  CHECK(f.out == "menu.txt\n");
  RunResult c = run_shell("cd " + dir + " && " + kZ + " classify --document -c menu.txt plain.txt");
  CHECK(c.out == "menu.txt:1\nplain.txt:0\n");
}

namespace {

// A fresh folder of the inputs the bad-input cases read: good.txt, bad.txt
// (invalid UTF-8 on line 2), binary.bin, locked.txt, notamodel.safetensors
// and other.safetensors (valid safetensors of another kind).
std::string bad_input_dir() {
  std::string dir = temp_dir();
  write_text(dir + "/good.txt", "佛跳墙\n");
  write_text(dir + "/bad.txt", "好\n好\xFF吃\n");
  write_text(dir + "/binary.bin", std::string("ELF\0\0\x01\x02", 7) + "\n");
  write_text(dir + "/locked.txt", "佛跳墙\n");
  write_text(dir + "/notamodel.safetensors", "this is not a model at all");
  float w[2] = {1, 2};
  write_text(dir + "/other.safetensors", encode_safetensors({{"format", "pt"}}, {{"weight", {2}, w}}));
  return dir;
}

}  // namespace

TEST_CASE("bad input: exact errors and exit status 2", "[classify]") {
  const std::string dir = bad_input_dir();
  struct Case {
    std::string args, err;
  };
  auto c = GENERATE_COPY(values<Case>({
      {"classify " + dir + "/missing.txt", "zibert: error: " + dir + "/missing.txt: No such file or directory\n"},
      {"classify " + dir, "zibert: error: " + dir + ": is a directory\n"},
      {"classify " + dir + "/bad.txt",
       "zibert: error: " + dir + "/bad.txt:2:4: invalid UTF-8 (--invalid replace carries on)\n"},
      {"classify " + dir + "/binary.bin", "zibert: error: " + dir + "/binary.bin:1: binary file (NUL byte); not text\n"},
      {"classify -m " + dir + "/nope.safetensors " + dir + "/good.txt",
       "zibert: error: " + dir + "/nope.safetensors: No such file or directory\n"},
      {"classify -m " + dir + "/notamodel.safetensors " + dir + "/good.txt",
       "zibert: error: " + dir + "/notamodel.safetensors: not a valid safetensors file: header length"},
      {"classify -m " + dir + "/other.safetensors " + dir + "/good.txt",
       "zibert: error: " + dir + "/other.safetensors: not a usable zibert model: format is \"pt\", not \"zibert\""},
      {"classify --threshold 2 " + dir + "/good.txt", "zibert: error: --threshold: Value 2 not in range"},
      {"classify --frobnicate " + dir + "/good.txt", "zibert: error: The following argument was not expected: --frobnicate"},
  }));
  INFO(c.args);
  RunResult r = run_shell(kZ + " " + c.args);
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::StartsWith(c.err));
  CHECK(lines_of(r.err).size() == 1);
}

// Apart from the generated cases above, which would run every section once per case.
TEST_CASE("bad input: an unreadable file, --invalid replace, and the output before an error", "[classify]") {
  const std::string dir = bad_input_dir();
  SECTION("an unreadable file") {
    // Root reads everything, so run as nobody; the binary and a model are copied
    // next to the file, since the build tree may sit where nobody cannot look.
    std::string as_nobody = ::geteuid() == 0 ? "setpriv --reuid=nobody --regid=nogroup --clear-groups " : "";
    save_model(dir + "/tiny.safetensors", tiny_classifier(2));
    REQUIRE(run_shell("cp " ZIBERT_BIN " " + dir + "/zibert && chmod 755 " + dir + " " + dir + "/zibert && chmod 644 " +
                      dir + "/tiny.safetensors && chmod 000 " + dir + "/locked.txt").status == 0);
    RunResult u = run_shell(as_nobody + dir + "/zibert classify -m " + dir + "/tiny.safetensors " + dir + "/locked.txt");
    CHECK(u.status == 2);
    CHECK(u.err == "zibert: error: " + dir + "/locked.txt: Permission denied\n");
  }
  SECTION("--invalid replace carries on") {
    RunResult ok = run_shell(kZ + " classify --invalid replace --no-text " + dir + "/bad.txt");
    CHECK(ok.status == 0);
    CHECK(lines_of(ok.out).size() == 2);
  }
  SECTION("output for earlier files is written before a later file's error") {
    RunResult later = run_shell(kZ + " classify --no-text " + dir + "/good.txt " + dir + "/bad.txt " + dir + "/good.txt");
    CHECK(later.status == 2);
    CHECK(lines_of(later.out).size() == 2);  // good.txt, and bad.txt's first line
    CHECK(later.out.starts_with("1\t"));
  }
}

TEST_CASE("a closed pipe ends classify quietly", "[classify]") {
  std::string dir = temp_dir();
  std::string big;
  for (int i = 0; i < 50000; ++i) big += "第" + std::to_string(i) + "行，他们点了一坛佛跳墙\n";
  write_text(dir + "/big.txt", big);
  RunResult r = run_shell(kZ + " classify " + dir + "/big.txt | head -1");
  CHECK(r.status == 0);
  CHECK(r.err.empty());
  CHECK(lines_of(r.out).size() == 1);
}

TEST_CASE("stdin lines are answered as they arrive (tail -f | zibert classify)", "[classify]") {
  // The second line comes 3 s after the first; the first answer must not wait for it.
  std::string script = temp_dir() + "/stream.sh";
  write_text(script, "{ echo 他们点了一坛佛跳墙; sleep 3; echo 狗急跳墙; } | " + kZ +
                         " classify --filter | { IFS= read -r -t 2 first && echo \"got:$first\"; cat > /dev/null; }\n");
  RunResult r = run_shell("bash " + script);
  CHECK(r.out == "got:他们点了一坛佛跳墙\n");
}

TEST_CASE("cmake --install puts a working zibert and its model under a prefix", "[classify][install]") {
  std::string prefix = temp_dir() + "/prefix";
  RunResult inst = run_shell("cmake --install " ZIBERT_BUILD_DIR " --prefix " + prefix);
  INFO(inst.out << inst.err);
  REQUIRE(inst.status == 0);
  RunResult r = run_shell("cd / && echo 他们点了一坛佛跳墙 | env -u ZIBERT_MODEL " + prefix + "/bin/zibert classify --no-text");
  CHECK(r.status == 0);
  CHECK(r.out.starts_with("1\t"));
  // The int8 twin is installed next to it.
  RunResult q = run_shell("cd / && echo 他们点了一坛佛跳墙 | " + prefix + "/bin/zibert classify --no-text -m " + prefix +
                          "/share/zibert/models/fotiaoqiang.int8.safetensors");
  CHECK(q.status == 0);
  CHECK(q.out.starts_with("1\t"));
  // ZIBERT_MODEL overrides the default.
  std::string tiny = temp_dir() + "/tiny.safetensors";
  save_model(tiny, tiny_classifier(5));
  RunResult info = run_shell("cd / && ZIBERT_MODEL=" + tiny + " " + prefix + "/bin/zibert info --json");
  CHECK(nlohmann::json::parse(info.out)["file"] == tiny);
  RunResult v = run_shell(prefix + "/bin/zibert --version");
  CHECK(v.out.starts_with("zibert "));
}

TEST_CASE("zero-width characters inside the phrase are invisible to the model, as to a reader", "[classify][tokenizer]") {
  const std::string dir = temp_dir();
  write_text(dir + "/in.txt", "他们点了佛\u200B跳墙\n佛\u200D跳\u2060墙好吃\n佛\u00AD跳\uFEFF墙\n");
  RunResult zw = run_zibert("classify --no-text " + dir + "/in.txt");
  write_text(dir + "/plain.txt", "他们点了佛跳墙\n佛跳墙好吃\n佛跳墙\n");
  RunResult plain = run_zibert("classify --no-text " + dir + "/plain.txt");
  REQUIRE(zw.status == 0);
  CHECK(zw.out == plain.out);
  for (const std::string& row : lines_of(zw.out)) CHECK(row.starts_with("1\t"));
}
