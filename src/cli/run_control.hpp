// What the training commands (train, pretrain) share on the command line:
// the options of the shape, the optimiser and the checkpoint, the tests'
// hidden fault-injection flags, and how a run's end is reported. The run
// itself is train/run's.
#pragma once
#include <string>

#include "cli.hpp"
#include "zibert/train/run.hpp"

namespace zibert::cli {

void add_fault_injection_options(CLI::App& app, FaultInjection& faults);
// --layers, --heads, --dim, --ffn, --max-len, --tie-qk, --no-position
// (refused next to init, which fixes the shape) and --dropout.
void add_shape_options(CLI::App& app, ModelConfig& shape, CLI::Option* init);
// --epochs, --batch, --lr, --warmup, --weight-decay, --clip, --seed.
void add_optimizer_options(CLI::App& app, TrainOptions& train);
// What train and distill both take at the end of their options: --windows,
// --threads, --quiet, --no-calibration and --log.
void add_classifier_run_options(CLI::App& app, RunRequest& request, bool& no_calibration);
// --checkpoint PATH and --resume CHECKPOINT (returned, for resume_excludes_others).
CLI::Option* add_checkpoint_options(CLI::App& app, std::string& checkpoint, std::string& resume);
// A resumed run takes everything from its checkpoint: every other option but
// --quiet and --help is refused next to resume.
void resume_excludes_others(CLI::App& app, CLI::Option* resume);

// The exit status of a run: 0 when it finished; a stopped one is said on
// stderr (where its checkpoint is, and how to continue) and gives 128 + signal.
int finish_run(const RunOutcome& outcome, const std::string& command);

// Under mpirun: refuses commands other than train and pretrain, and ranks
// whose command line or binary differ from rank 0's (an Error naming the rank).
void check_ranks_agree(int argc, char** argv);

}  // namespace zibert::cli
