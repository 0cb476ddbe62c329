// The command-line front end: per command an options struct, a setup function
// that declares the options on a CLI11 subcommand, and a run function.
#pragma once
#include <CLI/CLI.hpp>
#include <cstdint>
#include <functional>
#include <string>

#include "zibert/base/threads.hpp"
#include "zibert/model/model_file.hpp"
#include "zibert/text/dataset.hpp"

namespace zibert::cli {

// Exit statuses, as grep.
inline constexpr int kExitOk = 0, kExitNoMatch = 1, kExitError = 2;
// Sequences per masked-LM step unless told otherwise: pretrain's --batch,
// train's --pretrain-batch and bench --mlm's.
inline constexpr std::int64_t kPretrainBatch = 64;

// A model named on the command line: the file itself or, when there is no
// such file and the name has no '/', the shipped model of that name
// (zh-encoder or zh-encoder.safetensors) beside the installed binary, in the
// install prefix, or in the source tree's models/.
std::string find_model(const std::string& name);
// -m, else $ZIBERT_MODEL, else the shipped 佛跳墙 detector, which a line on
// stderr names (unless quiet): a default model is never chosen silently.
std::string resolve_model_path(const std::string& flag, bool quiet = false);
// The model resolve_model_path names, which must be a classifier (an encoder
// is an error naming the file).
Model load_classifier(const std::string& flag, bool quiet = false);

// Options several commands share, declared once.
void add_model_option(CLI::App& app, std::string& model);
// -m for the commands that write a model (calibrate, variants, quantize): no default.
void add_required_model_option(CLI::App& app, std::string& model);
void add_threads_option(CLI::App& app, int& threads);
// --bf16: sets the process's matrix products to bfloat16 (nn/gemm_bf16.hpp).
void add_bf16_option(CLI::App& app);
void add_inputs_option(CLI::App& app, std::vector<std::string>& inputs);  // files, - or none for stdin
void add_invalid_option(CLI::App& app, std::string& invalid);             // --invalid error|replace
CLI::Option* add_threshold_option(CLI::App& app, double& threshold);
// CLI::Range(lo, hi) for a floating-point option, refusing nan as well: CLI11
// reads "nan" as a number, and every comparison with it is false, so
// CLI::Range lets it through (--holdout nan crashed, --clip nan was ignored).
CLI::Validator finite_range(double lo, double hi);
// A labelled --data FILE, or - for standard input (read once, whole, into
// memory; named "(standard input)" in messages), as train, eval and calibrate
// take it.
CLI::Validator file_or_stdin();
Dataset read_data_option(const std::string& path, bool multi_label = false);
// --line-offset N: each input's first line is line N + 1 (records, -n, errors),
// for a block of a larger input (parallel --pipe -N: $(( ({#} - 1) * N ))).
CLI::Option* add_line_offset_option(CLI::App& app, std::int64_t& offset);

using Runner = std::function<int()>;
Runner setup_train(CLI::App& app);
Runner setup_pretrain(CLI::App& app);
Runner setup_distill(CLI::App& app);
Runner setup_classify(CLI::App& app);
Runner setup_eval(CLI::App& app);
Runner setup_info(CLI::App& app);
Runner setup_synth(CLI::App& app);
Runner setup_explain(CLI::App& app);
Runner setup_plot(CLI::App& app);
Runner setup_bench(CLI::App& app);
Runner setup_embed(CLI::App& app);
Runner setup_tokenize(CLI::App& app);
Runner setup_fill_mask(CLI::App& app);
Runner setup_quantize(CLI::App& app);
Runner setup_import(CLI::App& app);
Runner setup_export(CLI::App& app);
Runner setup_calibrate(CLI::App& app);
Runner setup_variants(CLI::App& app);

}  // namespace zibert::cli
