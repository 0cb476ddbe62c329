// Training over MPI: mpirun -np 2 gives the bits of one process
// with as many threads in all; stops and resumes; a killed rank ends the job;
// ranks that disagree are refused. Built only when MPI is (ZIBERT_TEST_MPI).
#include <catch2/catch.hpp>
#include <chrono>
#include <fstream>

#include "helpers.hpp"

using namespace zibert::test;

namespace {

// mpirun on this one machine: two ranks on two cores (or fewer), as root in CI.
const std::string kMpirun = "mpirun --oversubscribe --allow-run-as-root --bind-to none ";
const std::string kZ = std::string(ZIBERT_BIN);

std::string corpus(const std::string& dir) {
  const std::string path = dir + "/train.tsv";
  REQUIRE(run_shell("python3 " ZIBERT_SOURCE_DIR "/tests/fixtures/toy_corpus.py " + path + " 400 5 --pool 30 "
                    "--min-len 3 --max-len 20").status == 0);
  return path;
}

const std::string kShape = " --epochs 2 --batch 16 --dim 16 --heads 2 --ffn 32 --max-len 24 -q ";

}  // namespace

TEST_CASE("mpirun -np 2 train gives the bits of one process of as many threads", "[mpi]") {
  const std::string dir = temp_dir(), data = corpus(dir);
  const std::string args = " train --data " + data + kShape;
  REQUIRE(run_shell(kZ + args + "--threads 2 --out " + dir + "/one.safetensors").status == 0);
  RunResult r = run_shell(kMpirun + "-np 2 " + kZ + args + "--threads 1 --out " + dir + "/two.safetensors --log " +
                          dir + "/log.jsonl");
  INFO(r.err);
  REQUIRE(r.status == 0);
  CHECK(read_text(dir + "/two.safetensors") == read_text(dir + "/one.safetensors"));
  CHECK(lines_of(read_text(dir + "/log.jsonl")).size() == 2);  // rank 0 alone writes the log
  SECTION("2 ranks of 2 threads: one process of 4") {
    REQUIRE(run_shell(kZ + args + "--threads 4 --out " + dir + "/four.safetensors").status == 0);
    REQUIRE(run_shell(kMpirun + "-np 2 " + kZ + args + "--threads 2 --out " + dir + "/2x2.safetensors").status == 0);
    CHECK(read_text(dir + "/2x2.safetensors") == read_text(dir + "/four.safetensors"));
  }
}

TEST_CASE("mpirun -np 2 pretrain gives the bits of one process of 2 threads", "[mpi]") {
  const std::string dir = temp_dir();
  REQUIRE(run_shell("cut -f2 " + corpus(dir) + " > " + dir + "/text.txt").status == 0);
  const std::string args = " pretrain --text " + dir + "/text.txt --epochs 2 --batch 8 --dim 16 --heads 2 --ffn 32 "
                           "--max-len 32 -q ";
  REQUIRE(run_shell(kZ + args + "--threads 2 --out " + dir + "/one.safetensors").status == 0);
  RunResult r = run_shell(kMpirun + "-np 2 " + kZ + args + "--threads 1 --out " + dir + "/two.safetensors");
  INFO(r.err);
  REQUIRE(r.status == 0);
  CHECK(read_text(dir + "/two.safetensors") == read_text(dir + "/one.safetensors"));
}

TEST_CASE("mpirun -np 2 distill gives the bits of one process of 2 threads: the ranks share the labelling, rank 0 "
          "writes the cache", "[mpi][distill]") {
  const std::string dir = temp_dir(), data = corpus(dir);
  REQUIRE(run_shell(kZ + " train --data " + data + kShape + "--threads 2 --out " + dir + "/teacher.safetensors")
              .status == 0);
  REQUIRE(run_shell("cut -f2 " + data + " > " + dir + "/text.txt").status == 0);
  const std::string args = " distill --teacher " + dir + "/teacher.safetensors --data " + data + " --text " + dir +
                           "/text.txt --layers 1" + kShape;
  REQUIRE(run_shell(kZ + args + "--threads 2 --out " + dir + "/one.safetensors").status == 0);
  RunResult r = run_shell(kMpirun + "-np 2 " + kZ + args + "--threads 1 --out " + dir + "/two.safetensors");
  INFO(r.err);
  REQUIRE(r.status == 0);
  CHECK(read_text(dir + "/two.safetensors") == read_text(dir + "/one.safetensors"));
  CHECK(read_text(dir + "/two.safetensors.teacher-logits") == read_text(dir + "/one.safetensors.teacher-logits"));
}

TEST_CASE("a stop under mpirun leaves one checkpoint, exits 130, and --resume finishes the same model", "[mpi]") {
  const std::string dir = temp_dir(), data = corpus(dir);
  const std::string args = " train --data " + data + kShape + "--threads 1 --out " + dir + "/m.safetensors ";
  REQUIRE(run_shell(kZ + " train --data " + data + kShape + "--threads 2 --out " + dir + "/whole.safetensors").status ==
          0);
  RunResult stopped = run_shell(kMpirun + "-np 2 " + kZ + args + "--interrupt-at-step 9");
  CHECK(stopped.status == 130);
  CHECK_THAT(stopped.err, Catch::Contains("interrupted by SIGINT after step 9"));
  REQUIRE(read_text(dir + "/m.safetensors.ckpt").size() > 0);
  RunResult resumed = run_shell(kMpirun + "-np 2 " + kZ + " train -q --resume " + dir + "/m.safetensors.ckpt");
  INFO(resumed.err);
  REQUIRE(resumed.status == 0);
  CHECK(read_text(dir + "/m.safetensors") == read_text(dir + "/whole.safetensors"));
  SECTION("Ctrl-C to mpirun itself: Open MPI passes SIGTERM to every rank, which stop at one step and checkpoint") {
    RunResult ctrl_c = run_shell("( " + kMpirun + "-np 2 " + kZ + " train --data " + data + " --epochs 20000 "
                                 "--batch 16 --dim 16 --heads 2 --ffn 32 --max-len 24 -q --threads 1 --out " + dir +
                                 "/c.safetensors & sleep 2; kill -INT $!; wait $! )");
    CHECK(ctrl_c.status != 0);
    CHECK_THAT(ctrl_c.err, Catch::Contains("interrupted by SIGTERM after step") &&
                               Catch::Contains("checkpoint saved to " + dir + "/c.safetensors.ckpt"));
    CHECK(read_text(dir + "/c.safetensors.ckpt").size() > 0);
    CHECK_FALSE(std::ifstream(dir + "/c.safetensors").good());
  }
}

TEST_CASE("ranks that disagree are refused, other commands too, and a killed or failing rank ends the job", "[mpi]") {
  const std::string dir = temp_dir(), data = corpus(dir);
  const std::string args = " train --data " + data + kShape + "--threads 1 --out " + dir + "/m.safetensors";
  RunResult r = run_shell(kMpirun + "-np 1 " + kZ + args + " --seed 1 : -np 1 " + kZ + args + " --seed 2");
  CHECK(r.status != 0);
  CHECK_THAT(r.err, Catch::Contains("rank 1's command line differs from rank 0's"));
  // Another binary on rank 1: zibert with one byte more (it still runs).
  REQUIRE(run_shell("cp " + kZ + " " + dir + "/other-zibert && printf x >> " + dir + "/other-zibert").status == 0);
  r = run_shell(kMpirun + "-np 1 " + kZ + args + " : -np 1 " + dir + "/other-zibert" + args);
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::Contains("rank 1's zibert binary differs from rank 0's"));
  r = run_shell(kMpirun + "-np 2 " + kZ + " info");
  CHECK(r.status != 0);
  CHECK_THAT(r.err, Catch::Contains("only train, pretrain and distill run over MPI"));
  SECTION("rank 1 cannot read the data, or reads other bytes: the job ends at once, naming rank 1 and the cause") {
    // Same command line, other working directories: rank 1's train.tsv is missing, then different.
    REQUIRE(run_shell("mkdir " + dir + "/a " + dir + "/b " + dir + "/c && cp " + data + " " + dir + "/a/ && cp " +
                      data + " " + dir + "/c/ && printf '1\\tone more line\\n' >> " + dir + "/c/train.tsv").status == 0);
    const std::string rel = " train --data train.tsv" + kShape + "--threads 1 --out " + dir + "/w.safetensors";
    for (const std::string other : {"b", "c"}) {
      const auto start = std::chrono::steady_clock::now();
      RunResult bad = run_shell("timeout 120 " + kMpirun + "-np 1 --wdir " + dir + "/a " + kZ + rel + " : -np 1 --wdir " +
                                dir + "/" + other + " " + kZ + rel);
      const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      INFO(bad.err);
      CHECK(bad.status == 2);
      CHECK(seconds < 30);
      CHECK_THAT(bad.err, Catch::Contains(other == "b" ? "error on rank 1 of 2: --data: File does not exist: train.tsv"
                                                       : "rank 1 read other bytes for train.tsv than rank 0"));
      CHECK_FALSE(std::ifstream(dir + "/w.safetensors").good());
    }
  }
  SECTION("kill -9 of rank 1 mid-run: the job ends with an error naming it, within seconds") {
    const auto start = std::chrono::steady_clock::now();
    // Enough steps to be mid-run after a second; rank 1 is the second zibert of this run.
    RunResult killed = run_shell("( " + kMpirun + "-np 2 " + kZ + " train --data " + data +
                                 " --epochs 500 --batch 16 --dim 16 --heads 2 --ffn 32 --max-len 24 -q --threads 1 "
                                 "--out " + dir + "/k.safetensors & sleep 2; pkill -9 -n -f 'zibert train --data " +
                                 data + " --epochs 500'; wait %1 )");
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    CHECK(killed.status != 0);
    CHECK(seconds < 30);
    CHECK_THAT(killed.err, Catch::Contains("rank 1") || Catch::Contains("rank\t1") || Catch::Contains("Killed") ||
                               Catch::Contains("signal 9"));
    CHECK_FALSE(std::ifstream(dir + "/k.safetensors").good());
  }
}
