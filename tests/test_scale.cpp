// Inference fanned out: classify and embed are filters, so GNU
// parallel --pipe gives one process's output byte for byte; --line-offset
// continues JSONL line numbers across blocks; and writers sharing one pipe
// never tear each other's records.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "helpers.hpp"
#include "zibert/base/random.hpp"
#include "zibert/model/model_file.hpp"

using namespace zibert;
using namespace zibert::test;

namespace {

// zibert with a model of its own: random weights, 32 wide (a text's embed vector
// must not depend on its block: Eigen's column sums differed from 32 columns on),
// the shipped detector's window; the fan-out guarantees do not depend on what a
// model learnt, and the 128-wide detector would make these tests four times slower.
std::string fan_out_model() {
  Model model =
      random_classifier("今天的午饭是番茄炒蛋他们点了一坛佛跳墙狗急跳墙佛跳牆年菜味道不错，下次再来萬佛牆。", 128, 32, 2, 64, 3);
  model.classifier.windows = Windows::max;
  const std::string path = temp_dir() + "/fan-out.safetensors";
  save_model(path, model);
  return path;
}
const std::string& kz() {
  static const std::string command = "env ZIBERT_MODEL=" + fan_out_model() + " " + ZIBERT_BIN;
  return command;
}

// The sanitizer build runs zibert some twenty times slower:
// a twenty-fifth of the lines, in blocks of 32 kB (still three blocks).
#ifdef ZIBERT_SANITIZED
constexpr int kLines = 1200, kPerFile = 2000, kBlockLines = 400;
const std::string kBlock = "32k";
#else
constexpr int kLines = 30000, kPerFile = 20000, kBlockLines = 4000;
const std::string kBlock = "1M";
#endif

// n lines of every kind classify meets: mentions, near misses, empty lines,
// CRLF ends, texts longer than the window.
std::string mixed_lines(int n, std::uint64_t seed) {
  const std::vector<std::string> parts{"今天的午饭是番茄炒蛋", "他们点了一坛佛跳墙", "狗急跳墙", "佛跳牆年菜",
                                       "味道不错，下次再来", "佛 跳 墙", "萬佛牆", "。"};
  Rng r(seed);
  std::string out;
  for (int i = 0; i < n; ++i) {
    const std::uint64_t kind = r.below(20);
    // (Not a first line that is empty: GNU parallel 20221122's --pipe -N then gives the first block one line more.)
    if (kind == 0 && i > 0) {
      out += "\n";
      continue;
    }
    const std::uint64_t pieces = kind == 1 ? 40 : 1 + r.below(6);  // some longer than the 126-character window
    for (std::uint64_t p = 0; p < pieces; ++p) out += parts[r.below(parts.size())];
    out += kind == 2 ? "\r\n" : "\n";
  }
  return out;
}

void require_parallel() {
  if (run_shell("command -v parallel").status != 0)
    FAIL("GNU parallel is not installed (scripts/setup installs it: Debian package parallel)");
}

}  // namespace

TEST_CASE("parallel --pipe -k of classify and embed gives one process's output byte for byte", "[scale]") {
  require_parallel();
  const std::string dir = temp_dir();
  write_text(dir + "/in.txt", mixed_lines(kLines, 7));  // about 2.6 MB: three 1M blocks (sanitized: 0.1 MB, 32k)
  // (Catch runs the code outside the sections once per section: each fan-out is in one section of its own.)
  SECTION("classify: TSV byte for byte, JSONL one record per line") {
    for (const std::string& command : {std::string(" classify --threads 1"), std::string(" classify --threads 1 --format jsonl --no-text")}) {
      INFO(command);
      RunResult one = run_shell(kz() + command + " < " + dir + "/in.txt");
      RunResult fan = run_shell("parallel --pipe -k --block " + kBlock + " " + kz() + command + " < " + dir + "/in.txt");
      REQUIRE(one.status == 0);
      REQUIRE(fan.status == 0);
      CHECK(lines_of(one.out).size() == std::size_t(kLines));
      if (command.find("jsonl") == std::string::npos) CHECK(fan.out == one.out);  // JSONL lines restart per block
    }
  }
  SECTION("embed: the same vectors, byte for byte, TSV, f32 and JSONL (a text's vector does not depend on its block)") {
#ifdef ZIBERT_SANITIZED
    for (const std::string format : {"tsv"}) {  // the arithmetic is the same in every format
#else
    for (const std::string format : {"tsv", "f32", "jsonl"}) {
#endif
      INFO(format);
      const std::string command = " embed --threads 1 --format " + format + " < " + dir + "/in.txt";
      RunResult one = run_shell(kz() + command);
      RunResult fan = run_shell("parallel --pipe -k --block " + kBlock + " " + kz() + command);
      REQUIRE(one.status == 0);
      REQUIRE(fan.status == 0);
      if (format != "jsonl") {
        CHECK(fan.out == one.out);
        continue;
      }
      const std::vector<std::string> a = lines_of(one.out), b = lines_of(fan.out);  // JSONL lines restart per block
      REQUIRE(a.size() == std::size_t(kLines));
      REQUIRE(b.size() == a.size());
      std::size_t differ = 0;
      for (std::size_t i = 0; i < a.size(); ++i)
        differ += nlohmann::json::parse(a[i])["vector"].dump() != nlohmann::json::parse(b[i])["vector"].dump();
      CHECK(differ == 0);
    }
  }
  SECTION("JSONL: --line-offset continues the line numbers across blocks of known size") {
    RunResult one = run_shell(kz() + " classify --format jsonl --threads 1 < " + dir + "/in.txt");
    const std::string n = std::to_string(kBlockLines);
    RunResult fan = run_shell("parallel --pipe -k -N " + n + " '" + kz() +
                              " classify --format jsonl --threads 1 --line-offset $(( ({#} - 1) * " + n + " ))' < " + dir +
                              "/in.txt");
    REQUIRE(fan.status == 0);
    CHECK(fan.out == one.out);
    const std::vector<std::string> rows = lines_of(fan.out);
    REQUIRE(rows.size() == std::size_t(kLines));
    CHECK(nlohmann::json::parse(rows.back())["line"] == kLines);
    RunResult numbered = run_shell("parallel --pipe -k -N " + n + " '" + kz() +
                                   " classify -n --threads 1 --line-offset $(( ({#} - 1) * " + n + " ))' < " + dir +
                                   "/in.txt");
    CHECK(numbered.out == run_shell(kz() + " classify -n --threads 1 < " + dir + "/in.txt").out);
  }
  SECTION("errors name the line of the whole input") {
    write_text(dir + "/bad.txt", "一\n二\n\xFF\n");
    RunResult bad = run_shell(kz() + " classify --line-offset 4000 " + dir + "/bad.txt");
    CHECK(bad.status == 2);
    CHECK_THAT(bad.err, Catch::Contains(dir + "/bad.txt:4003:1: invalid UTF-8"));
  }
}

TEST_CASE("writers sharing one pipe never tear a record: each write is whole records within PIPE_BUF", "[scale]") {
  const std::string dir = temp_dir();
  for (int f = 0; f < 4; ++f) write_text(dir + "/in" + std::to_string(f) + ".txt", mixed_lines(kPerFile, 11 + f));
  // Four classify processes at once into the same pipe, JSONL with the text: records of 100-400 bytes.
  RunResult r = run_shell("ls " + dir + "/in*.txt | xargs -P 4 -n 1 " + kz() + " classify --format jsonl --threads 1 | cat");
  REQUIRE(r.status == 0);
  const std::vector<std::string> rows = lines_of(r.out);
  CHECK(rows.size() == std::size_t(4 * kPerFile));
  std::size_t bad = 0;
  for (const std::string& row : rows) {
    try {
      const nlohmann::json j = nlohmann::json::parse(row);
      bad += !j.contains("label") || !j.contains("text");
    } catch (const nlohmann::json::exception&) {
      ++bad;
    }
  }
  CHECK(bad == 0);
}
