// What a new user meets first: lost output, the default model, --threads,
// empty and bad input, and the positions errors name.
#include <algorithm>
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "helpers.hpp"

using namespace zibert;
using namespace zibert::test;

namespace {

const std::string kDetector = ZIBERT_SOURCE_DIR "/models/fotiaoqiang.safetensors";
const std::string kEncoder = ZIBERT_SOURCE_DIR "/models/zh-encoder.safetensors";

// A folder with a small labelled file and a few texts.
std::string front_dir() {
  const std::string dir = temp_dir();
  write_text(dir + "/d.tsv", "1\t他们点了一坛佛跳墙\n0\t狗急跳墙\n1\t佛跳牆很好吃\n0\t今天天气很好\n");
  write_text(dir + "/notes.txt", "他们点了一坛佛跳墙\n今天天气很好\n");
  return dir;
}

}  // namespace

TEST_CASE("output that cannot be written is an error, exit 2, for every command and for --help", "[cli][front]") {
  const std::string dir = front_dir();
  const std::string m = " -m " + kDetector;
  for (const std::string& args : std::vector<std::string>{"eval" + m + " --data " + dir + "/d.tsv --json", "eval" + m + " --data " + dir + "/d.tsv", "info" + m,
        "info --json" + m, "explain" + m + " 佛跳墙", "explain --json" + m + " 佛跳墙",
        "bench --json --seconds 0.01 --texts 8 --dim 8 --heads 2 --ffn 8 --max-len 16 --ceiling-size 64",
        "--help", "eval --help", "--version", "classify" + m + " " + dir + "/notes.txt",
        "fill-mask -m " + kEncoder + " '请输入密[MASK]。'", "embed" + m + " " + dir + "/notes.txt"}) {
    INFO(args);
    RunResult r = run_zibert(args + " > /dev/full");
    CHECK(r.status == 2);
    CHECK_THAT(r.err, Catch::Contains("zibert: error: write error on standard output"));
  }
}

TEST_CASE("the default model is never chosen silently, and commands that write a model need -m", "[cli][front]") {
  const std::string dir = front_dir();
  RunResult r = run_zibert("eval --data " + dir + "/d.tsv");
  CHECK(r.status == 0);
  CHECK_THAT(r.err, Catch::Contains("no -m given: using the default model ") &&
                        Catch::Contains("fotiaoqiang.safetensors"));
  CHECK_THAT(run_zibert("classify " + dir + "/notes.txt").err, Catch::Contains("using the default model"));
  // -m, $ZIBERT_MODEL and classify -q (which prints nothing) say nothing of it.
  CHECK(run_zibert("eval -m " + kDetector + " --data " + dir + "/d.tsv").err.empty());
  CHECK(run_shell("ZIBERT_MODEL=" + kDetector + " " ZIBERT_BIN " eval --data " + dir + "/d.tsv").err.empty());
  r = run_zibert("classify -q " + dir + "/notes.txt");
  CHECK(r.status == 0);
  CHECK(r.err.empty());
  // A shipped model by its name.
  r = run_zibert("info --json -m zh-encoder");
  REQUIRE(r.status == 0);
  CHECK(nlohmann::json::parse(r.out)["task"] == "mlm");
  for (const std::string& args : std::vector<std::string>{"calibrate --data " + dir + "/d.tsv --out " + dir + "/z.safetensors",
                                 "quantize --out " + dir + "/z.safetensors",
                                 "variants --clear --out " + dir + "/z.safetensors"}) {
    INFO(args);
    r = run_zibert(args);
    CHECK(r.status == 2);
    CHECK(r.err == "zibert: error: --model is required\n");
    CHECK(run_shell("test -e " + dir + "/z.safetensors").status != 0);
  }
}

TEST_CASE("every command accepts --threads", "[cli][front][release-only]") {
  const std::string dir = front_dir();
  for (const char* cmd : {"train", "pretrain", "classify", "embed", "fill-mask", "eval", "info", "quantize",
                          "calibrate", "variants", "synth", "explain", "plot", "bench"}) {
    INFO(cmd);
    CHECK_THAT(run_zibert(std::string(cmd) + " --help").out, Catch::Contains("--threads"));
  }
  write_text(dir + "/corpus.txt", "今天天气很好。\n我们去吃饭。\n他在写代码。\n明天下雨。\n");
  const std::string m = " -m " + kDetector;
  for (const std::string& args : std::vector<std::string>{"info --threads 1" + m, "fill-mask --threads 1 -m " + kEncoder + " '请输入密[MASK]。'",
        "quantize --threads 1" + m + " --out " + dir + "/q.safetensors",
        "variants --threads 1" + m + " --clear --out " + dir + "/v.safetensors",
        "synth --threads 1 --phrase 佛跳墙 --corpus " + dir + "/corpus.txt --out " + dir + "/s"}) {
    INFO(args);
    RunResult r = run_zibert(args);
    CHECK(r.status == 0);
    CHECK(r.err.find("error") == std::string::npos);
  }
}

TEST_CASE("a bad byte is file:line:column everywhere, the column in bytes of the whole line", "[cli][front]") {
  const std::string dir = front_dir();
  // Line 2, the bad byte at column 4 of the line (a label and a tab before the text where there is one).
  write_text(dir + "/bad.txt", "好的\nabc\xff\n");
  write_text(dir + "/bad-mask.txt", "请[MASK]\nabc\xff[MASK]\n");
  write_text(dir + "/bad.tsv", "1\t佛跳墙\n0\ta\xff\n");
  const std::string at = ":2:4: invalid UTF-8";
  const std::string m = " -m " + kDetector;
  const std::pair<std::string, std::string> cases[] = {
      {"classify" + m + " " + dir + "/bad.txt", dir + "/bad.txt" + at},
      {"embed" + m + " " + dir + "/bad.txt", dir + "/bad.txt" + at},
      {"pretrain -q --text " + dir + "/bad.txt --out " + dir + "/e.safetensors", dir + "/bad.txt" + at},
      {"synth --phrase 佛跳墙 --corpus " + dir + "/bad.txt --out " + dir + "/s", dir + "/bad.txt" + at},
      {"fill-mask -m " + kEncoder + " < " + dir + "/bad-mask.txt", "(standard input)" + at},
      {"explain" + m + " --file " + dir + "/bad.txt", dir + "/bad.txt" + at},
      {"train -q --data " + dir + "/bad.tsv --out " + dir + "/t.safetensors", dir + "/bad.tsv" + at},
      {"eval" + m + " --data " + dir + "/bad.tsv", dir + "/bad.tsv" + at},
      {"explain" + m + " $'好的\\nabc\\xff'", "(argument)" + at},
      {"fill-mask -m " + kEncoder + " 'x[MASK]' $'ab\\xff'", "(argument):2:3: invalid UTF-8"},
  };
  for (const auto& [args, message] : cases) {
    INFO(args);
    RunResult r = run_shell("bash -c \"" ZIBERT_BIN " " + args + "\"");
    CHECK(r.status == 2);
    CHECK_THAT(r.err, Catch::Contains("zibert: error: " + message));
  }
  CHECK(run_shell("test -e " + dir + "/e.safetensors -o -e " + dir + "/t.safetensors -o -e " + dir + "/s").status != 0);
}

TEST_CASE("empty inputs are refused where they make no sense", "[cli][front]") {
  const std::string dir = front_dir();
  write_text(dir + "/empty.txt", "");
  write_text(dir + "/blank.txt", "\n  \n");
  RunResult r = run_zibert("synth --phrase 佛跳墙 --corpus " + dir + "/empty.txt --out " + dir + "/s");
  CHECK(r.status == 2);
  CHECK(r.err == "zibert: error: " + dir + "/empty.txt: no sentences (the file is empty or every line is blank)\n");
  CHECK(run_shell("test -e " + dir + "/s").status != 0);
  r = run_zibert("explain -m " + kDetector + " ''");
  CHECK(r.status == 2);
  CHECK(r.err == "zibert: error: explain: the TEXT argument is empty; give a text to explain\n");
  for (const char* file : {"/empty.txt", "/blank.txt"}) {
    r = run_zibert("explain -m " + kDetector + " --file " + dir + file);
    CHECK(r.status == 2);
    CHECK_THAT(r.err, Catch::Contains(dir + file + ": no text to explain"));
  }
  r = run_zibert("explain -m " + kDetector);
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::Contains("explain needs a TEXT or --file FILE"));
}

TEST_CASE("multi-label TSV: an empty label field is a row of no labels, and [] says what to write", "[cli][front]") {
  const std::string dir = temp_dir();
  std::string rows;
  for (int i = 0; i < 6; ++i) rows += "food,price\t红烧肉太贵了\nfood\t红烧肉好吃\n\t今天天气很好\n";
  write_text(dir + "/tags.tsv", rows);
  RunResult r = run_zibert("train --multi-label -q --data " + dir + "/tags.tsv --out " + dir +
                           "/tags.safetensors --epochs 1 --dim 16 --heads 2 --ffn 32 --max-len 16 --threads 1");
  INFO(r.err);
  REQUIRE(r.status == 0);
  write_text(dir + "/brackets.tsv", rows + "[]\t明天下雨\n");
  r = run_zibert("train --multi-label -q --data " + dir + "/brackets.tsv --out " + dir + "/b.safetensors");
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::Contains("brackets.tsv:19: a label written [] in TSV: leave the label field empty"));
  r = run_zibert("train -q --data " + dir + "/tags.tsv --out " + dir + "/b.safetensors");
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::Contains("tags.tsv:3: row has no label (an empty label field means no labels only under "
                                    "--multi-label)"));
}

TEST_CASE("the smaller edges: stdin on a terminal, unwritable --out, encoders, --svg -", "[cli][front]") {
  const std::string dir = front_dir();
  SECTION("classify says when it reads standard input from a terminal, and not from a pipe") {
    // script(1) gives the command a terminal; </dev/null ends its input at once.
    RunResult r = run_shell("script -qec '" ZIBERT_BIN " classify -m " + kDetector + "' /dev/null < /dev/null");
    CHECK_THAT(r.out, Catch::Contains("zibert: reading standard input; Ctrl-D ends it"));
    r = run_shell("echo 佛跳墙 | " ZIBERT_BIN " classify -m " + kDetector);
    CHECK(r.status == 0);
    CHECK(r.err.empty());
  }
  SECTION("an --out nothing can be written to is named before any training") {
    RunResult r = run_zibert("train --data " + dir + "/d.tsv --out /proc/m.safetensors --epochs 1");
    CHECK(r.status == 2);
    CHECK(r.err == "zibert: error: /proc/m.safetensors: cannot create a file there: No such file or directory\n");
  }
  SECTION("an encoder where a classifier is needed names the file") {
    for (const std::string& args : std::vector<std::string>{"classify -m " + kEncoder + " " + dir + "/notes.txt",
                                   "eval -m " + kEncoder + " --data " + dir + "/d.tsv",
                                   "explain -m " + kEncoder + " 佛跳墙"}) {
      INFO(args);
      RunResult r = run_zibert(args);
      CHECK(r.status == 2);
      CHECK_THAT(r.err, Catch::StartsWith("zibert: error: " + kEncoder + ": this model is an encoder"));
    }
  }
  SECTION("explain --svg - writes the SVG alone to stdout") {
    RunResult r = run_zibert("explain -m " + kDetector + " --svg - 佛跳墙");
    CHECK(r.status == 0);
    CHECK_THAT(r.out, Catch::StartsWith("<?xml") && Catch::EndsWith("</svg>\n"));
    CHECK(run_zibert("explain -m " + kDetector + " --svg - --json 佛跳墙").status == 2);
  }
}

TEST_CASE("docs/cli.md is what the program's help says now", "[cli][front][docs]") {
  const std::string out = temp_dir() + "/cli.md";
  RunResult r = run_shell("python3 " ZIBERT_SOURCE_DIR "/cmake/help_docs.py " ZIBERT_BIN " --markdown " + out);
  REQUIRE(r.status == 0);
  INFO("regenerate it: cmake --build build --target cli-doc");
  CHECK(read_text(out) == read_text(ZIBERT_SOURCE_DIR "/docs/cli.md"));
}

TEST_CASE("an installed zibert runs from its prefix: default model, shipped models by name, man pages, completion",
          "[cli][front][install]") {
  const std::string prefix = temp_dir() + "/prefix";
  RunResult r = run_shell("cmake --install " ZIBERT_BUILD_DIR " --prefix " + prefix);
  INFO(r.out + r.err);
  REQUIRE(r.status == 0);
  const std::string z = prefix + "/bin/zibert";
  const std::string elsewhere = temp_dir();  // neither the source tree nor the build
  write_text(elsewhere + "/notes.txt", "他们点了一坛佛跳墙\n今天天气很好\n");
  r = run_shell("cd " + elsewhere + " && env -u ZIBERT_MODEL " + z + " classify notes.txt");
  CHECK(r.status == 0);
  CHECK_THAT(r.out, Catch::StartsWith("1\t") && Catch::Contains("\n0\t"));
  CHECK(r.err == "zibert: no -m given: using the default model " + prefix +
                     "/share/zibert/models/fotiaoqiang.safetensors (the 佛跳墙 detector)\n");
  r = run_shell("cd " + elsewhere + " && " + z + " fill-mask -k 1 -m zh-encoder '请输入密[MASK]。'");
  CHECK(r.status == 0);
  CHECK_THAT(r.out, Catch::StartsWith("1\t1\t码\t"));
  for (const char* page : {"zibert", "zibert-classify", "zibert-train", "zibert-fill-mask"}) {
    INFO(page);
    r = run_shell(std::string("MANWIDTH=100 man -l ") + prefix + "/share/man/man1/" + page + ".1");
    CHECK(r.status == 0);
    CHECK_THAT(r.out, Catch::Contains("zibert manual"));
  }
  CHECK_THAT(run_shell("MANWIDTH=100 man -l " + prefix + "/share/man/man1/zibert-classify.1").out,
             Catch::Contains("--filter"));
  // The completion offers the commands, then a command's options.
  const std::string complete = "source " + prefix + "/share/bash-completion/completions/zibert; ";
  r = run_shell("bash -c '" + complete + "COMP_WORDS=(zibert fi); COMP_CWORD=1; _zibert; echo ${COMPREPLY[*]}'");
  CHECK(r.out == "fill-mask\n");
  r = run_shell("bash -c '" + complete + "COMP_WORDS=(zibert classify --fil); COMP_CWORD=2; _zibert; echo ${COMPREPLY[*]}'");
  CHECK(r.out == "--filter\n");
}

TEST_CASE("the detector recipe runs from an installed zibert, on the user's own sentences, writing only its outputs",
          "[cli][front][install][detect][release-only]") {
  const std::string prefix = temp_dir() + "/prefix";
  REQUIRE(run_shell("cmake --install " ZIBERT_BUILD_DIR " --prefix " + prefix + " > /dev/null").status == 0);
  const std::string dir = temp_dir();
  // 120 plain sentences of the user's own, none with the phrase.
  std::string corpus;
  const char* who[] = {"我们", "他", "她们", "老师", "邻居", "同学"};
  const char* what[] = {"今天去公园散步", "在厨房里做饭", "明天早上开会", "周末去看电影", "在图书馆看书",
                        "下午喝了一杯茶", "买了一些水果", "坐地铁去上班", "在家里打扫房间", "晚上给朋友打电话"};
  const char* end[] = {"。", "，心情很好。"};
  for (const char* w : who)
    for (const char* x : what)
      for (const char* e : end) corpus += std::string(w) + x + e + "\n";
  write_text(dir + "/mine.txt", corpus);
  // A readings table of its own (Unihan's lines for 小 笼 包, and 饱 and 龅, read as 包 is).
  write_text(dir + "/readings.txt", "U+5305\tkMandarin\tbāo\nU+5C0F\tkMandarin\txiǎo\n"
                                    "U+7B3C\tkMandarin\tlóng\nU+9971\tkMandarin\tbǎo\nU+9F85\tkMandarin\tbāo\n");
  write_text(dir + "/about.txt", "一笼皮薄多汁的汤包\n那种咬开会流汤的小点心\n");  // descriptions, outliers
  RunResult help = run_shell(prefix + "/bin/zibert-detect-train --help");
  CHECK(help.status == 0);
  CHECK_THAT(help.out, Catch::Contains("--corpus FILE") && Catch::Contains("--prepare"));
  // PATH without the build tree: the installed script finds the installed zibert beside it.
  RunResult r = run_shell("cd " + dir + " && env -u ZIBERT_MODEL XDG_CACHE_HOME=" + dir + "/cache PATH=/usr/bin:/bin " +
                          prefix + "/bin/zibert-detect-train --phrase 小笼包 --corpus mine.txt --out xlb.safetensors "
                          "--epochs 1 --threads 2 --reading-channel --sound-only 0.15 --readings readings.txt --mix 'xiao long bao' "
                          "--describe about.txt --hold-out 龅");
  INFO(r.err);
  REQUIRE(r.status == 0);
  CHECK_THAT(r.out, Catch::Contains("summary\tphrase=小笼包"));
  r = run_shell("cd " + dir + " && " + prefix + "/bin/zibert info -m xlb.safetensors");
  CHECK_THAT(r.out, Catch::Contains("readings    3 syllables"));
  // 龅 is rare (the encoder has no row for it) and held out of the typos, so
  // the model has none either: it reads as 包, which sounds the same (variants --sound-alike).
  r = run_shell("cd " + dir + " && echo 小笼龅 | " + prefix + "/bin/zibert tokenize -m xlb.safetensors");
  CHECK(r.out == "[CLS] 小 笼 包 [SEP]\n");
  r = run_shell("cd " + dir + " && " + prefix + "/bin/zibert classify -m xlb.safetensors --no-text mine.txt | wc -l");
  CHECK(r.out == "120\n");
  // What it wrote: the model, and a cache only if it built opencc's variant table.
  r = run_shell("cd " + dir + " && find . -type f | grep -v '^./cache/' | sort");
  CHECK(r.out == "./about.txt\n./mine.txt\n./readings.txt\n./xlb.safetensors\n");
  write_text(dir + "/empty.txt", "\n\n");
  r = run_shell(prefix + "/bin/zibert-detect-train --phrase 小笼包 --corpus " + dir + "/empty.txt --out " + dir + "/e.safetensors");
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::Contains("empty.txt: no sentences"));
  r = run_shell(prefix + "/bin/zibert-detect-train --phrase 小笼包 --alias 'soup dumplings' --english some --corpus " +
                dir + "/mine.txt --out " + dir + "/e.safetensors");
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::Contains("--english some: give a number of sentences"));
  r = run_shell(prefix + "/bin/zibert-detect-train --phrase 小笼包 --seed -1 --corpus " + dir + "/mine.txt --out " + dir +
                "/e.safetensors");
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::Contains("--seed -1: give a whole number"));
  r = run_shell(prefix + "/bin/zibert-detect-train --phrase 小笼包 --sound-only 0.2 --corpus " + dir + "/mine.txt --out " +
                dir + "/e.safetensors");
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::Contains("--sound-only leaves characters to their readings: it needs --reading-channel"));
  // The English base sentences an English --alias brings: prose from fortune
  // files, verse and art left out, a seeded sample.
  REQUIRE(run_shell("mkdir -p " + dir + "/fortunes").status == 0);
  write_text(dir + "/fortunes/people", "A friend in need is a friend indeed, they say.\n%\n"
                                       "  Roses are red,\n  violets are blue,\n  sugar is sweet,\n  and so are you,\n  my dear.\n%\n"
                                       "Too short.\n%\nNever put off till tomorrow what you can do today.\n");
  write_text(dir + "/fortunes/people.dat", "binary index");
  const std::string english = prefix + "/share/zibert/recipe/english_sentences.py " + dir + "/english.txt --fortunes " +
                              dir + "/fortunes";
  r = run_shell(english);
  INFO(r.err);
  REQUIRE(r.status == 0);
  CHECK(read_text(dir + "/english.txt") ==
        "A friend in need is a friend indeed, they say.\nNever put off till tomorrow what you can do today.\n");
  REQUIRE(run_shell(english + " --count 1").status == 0);
  const std::string one = read_text(dir + "/english.txt");
  CHECK(std::count(one.begin(), one.end(), '\n') == 1);
}
