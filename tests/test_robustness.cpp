// Interrupted training and --resume, numerical trouble, failing storage and
// concurrent use, all through the CLI.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>

#include "helpers.hpp"
#include "zibert/model/model_file.hpp"

using namespace zibert;
using namespace zibert::test;
namespace fs = std::filesystem;

namespace {

// A small labelled corpus (the toy corpus of the end-to-end test) and flags
// that train on it in well under a second: 17 steps per epoch.
std::string toy_dir() {
  std::string dir = temp_dir();
  RunResult r = run_shell("python3 " ZIBERT_SOURCE_DIR "/tests/fixtures/toy_corpus.py " + dir + "/train.tsv 600 1");
  REQUIRE(r.status == 0);
  return dir;
}
const std::string kFlags = " --epochs 3 --dim 16 --heads 2 --ffn 32 --max-len 32 --threads 2 --batch 32 -q";

std::string train_cmd(const std::string& dir, const std::string& out) {
  return "train --data " + dir + "/train.tsv --out " + dir + "/" + out + kFlags;
}

bool same_file(const std::string& a, const std::string& b) { return read_text(a) == read_text(b); }

std::vector<std::string> temp_files_in(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().filename().string().find(".tmp.") != std::string::npos) out.push_back(e.path());
  return out;
}

}  // namespace

TEST_CASE("an interrupted then resumed training gives the uninterrupted model byte for byte", "[robust][resume]") {
  const std::string dir = toy_dir();
  REQUIRE(run_zibert(train_cmd(dir, "whole.safetensors")).status == 0);
  // mid-epoch 1, the last step of epoch 1, mid-epoch 2, the very last step
  auto [step, signal, status] = GENERATE(table<int, int, int>({{10, 2, 130}, {17, 15, 143}, {23, 2, 130}, {51, 15, 143}}));
  INFO("step " << step << ", signal " << signal);
  // An older model at the output path stays as it is until the run finishes.
  write_text(dir + "/part.safetensors", read_text(dir + "/whole.safetensors").substr(0, 100));
  const std::string old = read_text(dir + "/part.safetensors");
  RunResult r = run_zibert(train_cmd(dir, "part.safetensors") + " --interrupt-at-step " + std::to_string(step) +
                           " --interrupt-signal " + std::to_string(signal));
  CHECK(r.status == status);
  CHECK_THAT(r.err, Catch::Contains("after step " + std::to_string(step)) &&
                        Catch::Contains("continue with: zibert train --resume " + dir + "/part.safetensors.ckpt"));
  CHECK(read_text(dir + "/part.safetensors") == old);
  REQUIRE(fs::exists(dir + "/part.safetensors.ckpt"));
  CHECK(temp_files_in(dir).empty());

  r = run_zibert("train -q --resume " + dir + "/part.safetensors.ckpt");
  REQUIRE(r.status == 0);
  CHECK(same_file(dir + "/whole.safetensors", dir + "/part.safetensors"));
  CHECK_FALSE(fs::exists(dir + "/part.safetensors.ckpt"));  // done with once the model is saved
}

TEST_CASE("resume refuses changed data, other flags and files that are not checkpoints", "[robust][resume]") {
  const std::string dir = toy_dir();
  REQUIRE(run_zibert(train_cmd(dir, "m.safetensors") + " --interrupt-at-step 5").status == 130);
  const std::string ckpt = dir + "/m.safetensors.ckpt";
  RunResult r = run_zibert("train --resume " + ckpt + " --epochs 5");
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::Contains("excludes"));

  write_text(dir + "/other.tsv", "1\tx\n0\ty\n");
  r = run_zibert("train --data " + dir + "/other.tsv --dev " + dir + "/other.tsv --out " + dir +
                 "/o.safetensors --epochs 1 -q");
  REQUIRE(r.status == 0);
  r = run_zibert("train --resume " + dir + "/o.safetensors");
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::Contains("holds no training state"));

  const std::string data = read_text(dir + "/train.tsv");
  write_text(dir + "/train.tsv", data + "1\t多一行佛跳墙\n");
  r = run_zibert("train --resume " + ckpt);
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::Contains("train.tsv: changed since the checkpoint was written"));
  write_text(dir + "/train.tsv", data);
  CHECK(run_zibert("train -q --resume " + ckpt).status == 0);
}

TEST_CASE("a non-finite loss stops training, names the step and keeps the last good checkpoint", "[robust]") {
  const std::string dir = toy_dir();
  REQUIRE(run_zibert(train_cmd(dir, "whole.safetensors")).status == 0);
  RunResult r = run_zibert(train_cmd(dir, "m.safetensors") + " --nan-at-step 25");
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::StartsWith("zibert: error: training diverged: the loss is not finite at step 25") &&
                        Catch::Contains("the last good checkpoint, from the end of epoch 1, is " + dir +
                                        "/m.safetensors.ckpt"));
  CHECK_FALSE(fs::exists(dir + "/m.safetensors"));
  // The checkpoint is whole and continues the run (without the fault).
  REQUIRE(run_zibert("train -q --resume " + dir + "/m.safetensors.ckpt").status == 0);
  CHECK(same_file(dir + "/whole.safetensors", dir + "/m.safetensors"));

  r = run_zibert(train_cmd(dir, "early.safetensors") + " --nan-at-step 3");
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::Contains("at step 3") && Catch::Contains("no checkpoint yet"));
}

TEST_CASE("eval names the labels the model does not know", "[robust]") {
  const std::string dir = toy_dir();
  REQUIRE(run_zibert(train_cmd(dir, "m.safetensors")).status == 0);
  write_text(dir + "/test.tsv", "1\t佛跳墙\nmaybe\t佛\n0\t墙\nperhaps\t跳\n");
  RunResult r = run_zibert("eval -m " + dir + "/m.safetensors --data " + dir + "/test.tsv");
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::Contains("labels the model does not know: \"maybe\", \"perhaps\""));
}

TEST_CASE("output paths that cannot be written are errors before training", "[robust][storage]") {
  const std::string dir = toy_dir();
  fs::create_directory(dir + "/a_directory");
  struct Case {
    std::string out, message;
  };
  auto c = GENERATE_COPY(values<Case>({
      {dir + "/missing/m.safetensors", "does not exist"},
      {"/dev/full", "is not a regular file"},
      {dir + "/a_directory", "is not a regular file"},
  }));
  INFO(c.out);
  RunResult r = run_zibert("train --data " + dir + "/train.tsv --out " + c.out + kFlags);
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::StartsWith("zibert: error: " + c.out) && Catch::Contains(c.message));
  CHECK(r.err.find("epoch") == std::string::npos);  // nothing was trained
  CHECK(fs::is_directory(dir + "/a_directory"));
  r = run_zibert(train_cmd(dir, "m.safetensors") + " --checkpoint " + dir + "/m.safetensors");
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::Contains("the checkpoint needs a path of its own"));
  // The checkpoint path is checked as well.
  r = run_zibert(train_cmd(dir, "m.safetensors") + " --checkpoint " + c.out);
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::Contains(c.message));
}

TEST_CASE("a read-only directory is refused before training", "[robust][storage]") {
  const std::string dir = toy_dir();
  const std::string ro = dir + "/ro";
  fs::create_directory(ro);
  bool mounted = false;
  if (::geteuid() == 0) {  // root writes through permissions: use a read-only mount
    mounted = run_shell("mount -t tmpfs -o size=64k,ro tmpfs " + ro).status == 0;
    if (!mounted) {
      WARN("cannot mount a read-only tmpfs here (not permitted); skipped");
      return;
    }
  } else {
    fs::permissions(ro, fs::perms::owner_read | fs::perms::owner_exec);
  }
  RunResult r = run_zibert("train --data " + dir + "/train.tsv --out " + ro + "/m.safetensors" + kFlags);
  if (mounted) run_shell("umount " + ro);
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::Contains("is not writable"));
}

TEST_CASE("a write that fails midway is a clear error and the old model stays whole", "[robust][storage]") {
  const std::string dir = toy_dir();
  const std::string flags = " --epochs 1 --dim 16 --heads 2 --ffn 32 --max-len 32 -q";
  REQUIRE(run_zibert("train --data " + dir + "/train.tsv --out " + dir + "/old.safetensors" + flags).status == 0);
  const std::string old = read_text(dir + "/old.safetensors");
  REQUIRE(old.size() > 30000);

  SECTION("the file size limit (ulimit -f) is reached") {
    RunResult r = run_shell("ulimit -f 20; " ZIBERT_BIN " train --data " + dir + "/train.tsv --out " + dir +
                            "/old.safetensors --seed 9" + flags);
    CHECK(r.status == 2);
    CHECK_THAT(r.err, Catch::StartsWith("zibert: error: " + dir + "/old.safetensors: write failed: File too large"));
    CHECK(read_text(dir + "/old.safetensors") == old);
    CHECK(temp_files_in(dir).empty());
  }
  SECTION("the disk is full (a tmpfs with room for one model and a bit)") {
    const std::string small = dir + "/small";
    fs::create_directory(small);
    const std::size_t kb = (old.size() + 1023) / 1024 + 12;
    if (run_shell("mount -t tmpfs -o size=" + std::to_string(kb) + "k tmpfs " + small).status != 0) {
      WARN("cannot mount a tmpfs here (not permitted); the file size limit case covers a failing write");
      return;
    }
    write_text(small + "/old.safetensors", old);  // no room for a second copy
    RunResult r = run_zibert("train --data " + dir + "/train.tsv --out " + small + "/old.safetensors --seed 9" + flags);
    const std::string after = read_text(small + "/old.safetensors");
    const auto temps = temp_files_in(small);
    run_shell("umount " + small);
    CHECK(r.status == 2);
    CHECK_THAT(r.err, Catch::Contains("old.safetensors: write failed: No space left on device"));
    CHECK(after == old);
    CHECK(temps.empty());
  }
}

TEST_CASE("concurrent use: two classifiers share a model and a reader sees the old or the new model whole", "[robust][concurrency]") {
  const std::string dir = toy_dir();
  REQUIRE(run_zibert(train_cmd(dir, "m.safetensors")).status == 0);
  run_shell("cut -f2 " + dir + "/train.tsv > " + dir + "/texts.txt");
  const std::string classify = std::string(ZIBERT_BIN) + " classify --no-text --threads 1 -m " + dir + "/m.safetensors " +
                               dir + "/texts.txt";
  RunResult one = run_shell(classify);
  REQUIRE(one.status == 0);
  RunResult both = run_shell("(" + classify + " > " + dir + "/a.out) & (" + classify + " > " + dir +
                             "/b.out) & wait %1 && wait %2");
  CHECK(both.status == 0);
  CHECK(read_text(dir + "/a.out") == one.out);
  CHECK(read_text(dir + "/b.out") == one.out);

  // Retrain into the same path while a loop keeps reading it.
  RunResult r = run_shell("set -e; " ZIBERT_BIN " train --data " + dir + "/train.tsv --out " + dir +
                          "/m.safetensors --seed 5" + kFlags + " & train=$!; n=0; while kill -0 $train 2>/dev/null; do " +
                          classify + " > /dev/null || { echo READ-FAILED; exit 1; }; n=$((n+1)); done; wait $train; "
                          "echo reads=$n");
  CHECK(r.status == 0);
  CHECK(r.out.find("READ-FAILED") == std::string::npos);
  CHECK(r.out.find("reads=") != std::string::npos);
  CHECK(run_shell(classify).status == 0);
}

TEST_CASE("a SIGTERM from another process mid-run leaves a checkpoint that resumes", "[robust][resume]") {
  const std::string dir = toy_dir();
  // Long enough not to finish first: the signal is sent once the log shows the
  // first finished epoch, not after a fixed time.
  RunResult r = run_shell("cd " + dir + " && (" ZIBERT_BIN " train --data train.tsv --out m.safetensors --epochs 2000"
                          " --dim 16 --heads 2 --ffn 32 --max-len 32 --threads 2 -q --log log.jsonl & pid=$!;"
                          " while [ ! -s log.jsonl ] && kill -0 $pid 2>/dev/null; do sleep 0.05; done;"
                          " kill -TERM $pid; wait $pid; echo status=$?)");
  CHECK_THAT(r.out, Catch::Contains("status=143"));
  CHECK_THAT(r.err, Catch::Contains("interrupted by SIGTERM after step"));
  CHECK_FALSE(fs::exists(dir + "/m.safetensors"));
  REQUIRE(fs::exists(dir + "/m.safetensors.ckpt"));
  // The checkpoint loads and training goes on from it (stopped again one step later).
  const std::size_t at = r.err.find("after step ");
  REQUIRE(at != std::string::npos);
  const long long step = std::stoll(r.err.substr(at + 11));
  r = run_zibert("train -q --resume " + dir + "/m.safetensors.ckpt --interrupt-at-step " + std::to_string(step + 1));
  CHECK(r.status == 130);
  CHECK_THAT(r.err, Catch::Contains("after step " + std::to_string(step + 1)));
}

TEST_CASE("gradient accumulation (train --accumulate) gives the model of one batch that many times larger, and resumes exactly", "[robust][accumulate]") {
  const std::string dir = toy_dir();
  const std::string flags = " --epochs 2 --dim 16 --heads 2 --ffn 32 --max-len 32 --threads 2 -q --no-calibration";
  auto train = [&](const std::string& out, const std::string& more) {
    return run_zibert("train --data " + dir + "/train.tsv --out " + dir + "/" + out + flags + more);
  };
  REQUIRE(train("big.safetensors", " --batch 32").status == 0);
  REQUIRE(train("acc.safetensors", " --batch 8 --accumulate 4").status == 0);
  const Model big = load_model(dir + "/big.safetensors"), acc = load_model(dir + "/acc.safetensors");
  CHECK(acc.training["accumulate"] == 4);
  CHECK(acc.training["steps"] == big.training["steps"]);  // 32 sequences per step in both
  CHECK_FALSE(big.training.contains("accumulate"));
  const AlignedVector<float>& a = acc.net.params();
  const AlignedVector<float>& b = big.net.params();
  REQUIRE(a.size() == b.size());
  double worst = 0;  // the same steps, summed in another order: float rounding only
  for (std::size_t i = 0; i < a.size(); ++i) worst = std::max(worst, double(std::abs(a[i] - b[i])));
  CHECK(worst < 1e-3);
  CHECK(worst > 0);  // another summation order: the runs really differ in how they added
  RunResult r = run_zibert("info -m " + dir + "/acc.safetensors");
  CHECK_THAT(r.out, Catch::Contains("batch 8 x 4 rounds"));
  // Stopped and resumed, the accumulating run gives the same bytes.
  r = train("part.safetensors", " --batch 8 --accumulate 4 --interrupt-at-step 20 --interrupt-signal 2");
  CHECK(r.status == 130);
  REQUIRE(run_zibert("train -q --resume " + dir + "/part.safetensors.ckpt").status == 0);
  CHECK(same_file(dir + "/acc.safetensors", dir + "/part.safetensors"));
  CHECK(train("bad.safetensors", " --accumulate 0").status == 2);
}
