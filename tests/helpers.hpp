// Shared test helpers: a tiny classifier, temp dirs, running the CLI.
#pragma once
#include <string>
#include <vector>

#include "zibert/model/model_file.hpp"

namespace zibert::test {

// A model shape in one line.
ModelConfig model_shape(std::int64_t vocab, std::int64_t max_len, std::int64_t dim, std::int64_t heads,
                        std::int64_t ffn, std::int64_t layers, std::int64_t labels, double dropout);

// A 2-label model with a small CJK vocabulary and random weights.
Classifier tiny_classifier(std::uint64_t seed = 1);
// The same shape as an encoder (task mlm: cls.predictions.*, no labels).
Classifier tiny_encoder(std::uint64_t seed = 1);

// A fresh empty directory under $TMPDIR, removed by the OS eventually.
std::string temp_dir();

void write_text(const std::string& path, const std::string& text);
std::string read_text(const std::string& path);
std::vector<std::string> lines_of(const std::string& text);

struct RunResult {
  int status = -1;
  std::string out, err;
};
// Runs the zibert binary with a shell argument string (stdin from /dev/null
// unless the args redirect it).
RunResult run_zibert(const std::string& args);
// Runs any shell command.
RunResult run_shell(const std::string& command);

}  // namespace zibert::test
