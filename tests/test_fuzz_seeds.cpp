// The libFuzzer targets (tests/fuzz/) replayed on their committed inputs:
// the seeds, the corpus kept from fuzzing runs, and every input that once
// crashed (tests/fuzz/regressions/<target>/). Runs in every build, the
// sanitizer build included, without clang or libFuzzer.
#include <catch2/catch.hpp>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

extern "C" int zibert_fuzz_tokenizer(const std::uint8_t*, std::size_t);
extern "C" int zibert_fuzz_safetensors(const std::uint8_t*, std::size_t);
extern "C" int zibert_fuzz_model(const std::uint8_t*, std::size_t);
extern "C" int zibert_fuzz_tsv(const std::uint8_t*, std::size_t);
extern "C" int zibert_fuzz_fasttext(const std::uint8_t*, std::size_t);
extern "C" int zibert_fuzz_jsonl(const std::uint8_t*, std::size_t);

namespace fs = std::filesystem;

TEST_CASE("the fuzz targets run clean on their seeds and on every past crash", "[fuzz]") {
  using Target = int (*)(const std::uint8_t*, std::size_t);
  auto [name, target] = GENERATE(table<std::string, Target>({{"tokenizer", zibert_fuzz_tokenizer},
                                                             {"safetensors", zibert_fuzz_safetensors},
                                                             {"model", zibert_fuzz_model},
                                                             {"tsv", zibert_fuzz_tsv},
                                                             {"fasttext", zibert_fuzz_fasttext},
                                                             {"jsonl", zibert_fuzz_jsonl}}));
  int inputs = 0;
  for (const char* kind : {"corpus", "regressions"}) {
    fs::path dir = fs::path(ZIBERT_SOURCE_DIR) / "tests" / "fuzz" / kind / name;
    if (!fs::exists(dir)) continue;
    for (const auto& entry : fs::directory_iterator(dir)) {
      std::ifstream in(entry.path(), std::ios::binary);
      std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      INFO(entry.path().string());
      CHECK(target(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size()) == 0);
      ++inputs;
    }
  }
  INFO(name);
  CHECK(inputs > 0);
}
