// What the training commands (train, pretrain) share: stopping on
// SIGINT/SIGTERM with a checkpoint, the tests' hidden fault-injection flags,
// and the options of the shape and the optimiser.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "cli.hpp"
#include "zibert/base/io.hpp"
#include "zibert/base/progress.hpp"
#include "zibert/text/corpus.hpp"
#include "zibert/train/checkpoint.hpp"
#include "zibert/train/trainer_hooks.hpp"

namespace zibert::cli {

// The hidden flags of the tests: after this step raise signal; make this step's loss NaN.
struct FaultInjection {
  std::int64_t interrupt_at_step = -1, nan_at_step = -1;
  int interrupt_signal = 2;  // SIGINT
};
void add_fault_injection_options(CLI::App& app, FaultInjection& faults);

// Installs the SIGINT/SIGTERM handlers: the first signal asks the run to stop
// after its step (and save its checkpoint), a second one ends the process.
TrainHooks stop_hooks(const FaultInjection& faults);

// Reports a stopped run on stderr; returns the exit status (128 + signal).
int report_interrupted(const Interrupted& stop, const std::string& command);

// --layers, --heads, --dim, --ffn, --max-len, --tie-qk, --no-position
// (refused next to init, which fixes the shape) and --dropout.
void add_shape_options(CLI::App& app, ModelConfig& shape, CLI::Option* init);
// --epochs, --batch, --lr, --warmup, --weight-decay, --clip, --seed.
void add_optimizer_options(CLI::App& app, TrainOptions& train);
// --checkpoint PATH and --resume CHECKPOINT (returned, for resume_excludes_others).
CLI::Option* add_checkpoint_options(CLI::App& app, std::string& checkpoint, std::string& resume);
// A resumed run takes everything from its checkpoint: every other option but
// --quiet and --help is refused next to resume.
void resume_excludes_others(CLI::App& app, CLI::Option* resume);

// Sets opt.checkpoint_path (checkpoint, else OUT.ckpt) and checks, before any
// work, that the model, the checkpoint and the log can be written.
// Under mpirun: refuses commands other than train and pretrain, and ranks
// whose command line or binary differ from rank 0's (an Error naming the rank).
void check_ranks_agree(int argc, char** argv);
// Under mpirun: an Error unless every rank's fingerprint of `what` (a data
// file) is rank 0's. One process: nothing to check.
// On --resume: an Error unless the checkpoint's run (its "ranks") had as many ranks as now.
void check_ranks(const nlohmann::json& run, const std::string& path);
void check_same_data(const std::string& what, const std::string& fingerprint);
// Raw-text files (pretrain --text, train --outliers), each read once for its
// fingerprint (appended to prints) and once as a corpus. A resumed run passes
// its checkpoint's fingerprints: a file that changed since is an error, and
// every rank must read the same bytes.
std::vector<Corpus> read_text_files(const std::vector<std::string>& paths, const std::vector<std::string>* resumed,
                                    std::vector<std::string>& prints);

// Checks, before any work, that the model (out), the checkpoint and the log
// can be written, are three different files, and replace none of the inputs.
void prepare_outputs(const std::string& out, const std::string& checkpoint, TrainOptions& opt,
                     const std::vector<NamedPath>& inputs);

// Saves the finished model atomically, removes the run's checkpoint, and says
// what was saved: "saved OUT (best epoch N, METRIC X) in T".
void save_finished(const std::string& out, const Model& model, const TrainOptions& opt, const char* metric,
                   const char* metric_field, double seconds, Progress& progress);

// The model --init starts from; an int8 one (zibert quantize's) is refused:
// its weights are rounded, and training needs the float32 model.
Model load_init_model(const std::string& path);

// The run's record for checkpoints: a path made absolute (--resume may run
// from another directory), "" stays "".
std::string absolute_path(const std::string& path);

}  // namespace zibert::cli
