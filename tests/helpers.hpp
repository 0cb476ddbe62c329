// Shared test helpers: a tiny classifier, temp dirs, running the CLI.
#pragma once
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "zibert/model/model_file.hpp"
#include "zibert/model/safetensors.hpp"

namespace zibert::test {

// A model shape in one line.
ModelConfig model_shape(std::int64_t vocab, std::int64_t max_len, std::int64_t dim, std::int64_t heads,
                        std::int64_t ffn, std::int64_t layers, std::int64_t labels, double dropout);

// A 2-label model with random weights, its vocabulary the characters of text.
Model random_classifier(const std::string& text, std::int64_t max_len, std::int64_t dim, std::int64_t heads,
                             std::int64_t ffn, std::uint64_t seed);
// A 2-label model with a small CJK vocabulary and random weights.
Model tiny_classifier(std::uint64_t seed = 1);
// The same shape as an encoder (task mlm: cls.predictions.*, no labels).
Model tiny_encoder(std::uint64_t seed = 1);

// A fresh empty directory under $TMPDIR, removed when the test process exits
// (kept if ZIBERT_KEEP_TEST_DIRS is set).
std::string temp_dir();

// A directory the test processes of one build share (CTest runs every test
// case in a process of its own): `make` fills it once, under a lock, and
// later processes reuse it while the zibert binary and the test binary are
// the ones that made it. For what is slow to make and only read afterwards,
// such as a model trained through the CLI.
std::string shared_dir(const std::string& name, const std::function<void(const std::string& dir)>& make);

void write_text(const std::string& path, const std::string& text);
// A safetensors file's metadata and tensors, owned, to be edited and written
// back (the hostile-file tests): rebuild_file(bytes, edit) decodes bytes,
// lets edit change them, and encodes the result.
struct EditedTensor {
  std::vector<std::int64_t> shape;
  DType dtype;
  std::string bytes;
};
struct EditedFile {
  std::map<std::string, std::string> metadata;
  std::map<std::string, EditedTensor> tensors;
};
std::string rebuild_file(const std::string& bytes, const std::function<void(EditedFile&)>& edit);
// What decode_model says of bytes named bad.safetensors ("(no error)" if it reads them).
std::string decode_error(const std::string& bytes);
// Writes the model file `from` to `to` with one metadata string set to value
// (the hostile-metadata tests).
void write_with_metadata(const std::string& from, const std::string& to, const std::string& key,
                         const std::string& value);
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

// data/demo.tsv's texts, one a line, written to dir/demo.txt; that path.
std::string write_demo_texts(const std::string& dir);
// zibert classify of texts by model a and by model b, each of which must run:
// the same label on every line (Catch checks). b's output.
std::string classify_same_labels(const std::string& a, const std::string& b, const std::string& texts);

// Runs `zibert COMMAND ARGS --checkpoint CHECKPOINT --interrupt-at-step STEP`
// (ARGS include --out), which must stop, then `zibert COMMAND --resume
// CHECKPOINT`, which must succeed (Catch checks both).
void interrupt_and_resume(const std::string& args, const std::string& checkpoint, int step,
                          const std::string& command = "train");

}  // namespace zibert::test
