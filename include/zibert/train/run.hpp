// A training run as the commands start it: what it reads and writes, its
// record in the checkpoint (so that --resume finds the same files, checked by
// fingerprint), the output checks before any work, stopping on SIGINT and
// SIGTERM, and saving the result. train_run and pretrain_run are zibert
// train and zibert pretrain, given their options.
#pragma once
#include <chrono>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "zibert/base/io.hpp"
#include "zibert/base/progress.hpp"
#include "zibert/model/model.hpp"
#include "zibert/text/corpus.hpp"
#include "zibert/train/checkpoint.hpp"
#include "zibert/train/run_record.hpp"
#include "zibert/train/trainer_hooks.hpp"

namespace zibert {

// The hidden flags of the tests: after this step raise the signal; make this step's loss NaN.
struct FaultInjection {
  std::int64_t interrupt_at_step = -1, nan_at_step = -1;
  int interrupt_signal = 2;  // SIGINT
};
// Installs the SIGINT/SIGTERM handlers: the first signal asks the run to stop
// after its step (and save its checkpoint), a second one ends the process.
TrainHooks stop_hooks(const FaultInjection& faults);

// The paths a run writes: the model, its checkpoint (default OUT.ckpt) and
// its log. Checked before any work: each can be written, the three differ,
// and none replaces an input.
void prepare_outputs(const std::string& out, const std::string& checkpoint, TrainOptions& opt,
                     const std::vector<NamedPath>& inputs);

// Under mpirun: an Error unless every rank's fingerprint of `what` (a data
// file) is rank 0's. One process: nothing to check.
void check_same_data(const std::string& what, const std::string& fingerprint);
// Raw-text files (pretrain --text, train --outliers), each read once for its
// fingerprint (appended to prints) and once as a corpus. A resumed run passes
// its record's fingerprints: a file that changed since is an error.
std::vector<Corpus> read_text_files(const std::vector<std::string>& paths, const nlohmann::json* resumed,
                                    std::vector<std::string>& prints);

// Fits a classifier's temperature on dev (train/calibrate.hpp) and says how
// its NLL and ECE moved.
void calibrate_on_dev(Model& model, const Dataset& dev, Progress& progress);

// The labelled data of --data: a file, or standard input read once into
// memory, its fingerprint recorded (or, resumed, checked) under
// "data_fingerprint" and the same on every rank.
Dataset read_training_data(RunRecord& record, const std::string& data, bool multi_label);

// The model --init starts from; an int8 one (zibert quantize's) is refused:
// its weights are rounded, and training needs the float32 model.
Model load_init_model(const std::string& path);

// The peak learning rate fine-tuning from an encoder starts with unless --lr
// says otherwise: lower than training from scratch (1e-3), as BERT recipes
// are; docs/results/pretraining.md measured it.
inline constexpr double kFineTuneLr = 3e-4;

// What train and pretrain are given: their options, less the command line's own.
struct RunRequest {
  std::string dev, out, init, resume, checkpoint;
  TrainOptions train;
  double holdout = 0.1;
  int threads = 0;  // as --threads says; the count used goes into train.threads
  bool quiet = false, lr_given = false;
  FaultInjection faults;
};
struct TrainRequest : RunRequest {
  std::string data;  // a file, or "-" for standard input
  bool no_calibration = false, min_count_given = false;
  bool epochs_given = false, batch_given = false, warmup_given = false;
  // Self-pretraining first (train --pretrain-epochs): on the training texts and these.
  std::int64_t pretrain_epochs = 0, pretrain_batch = 64;
  double pretrain_lr = 1e-3;
  std::vector<std::string> pretrain_texts;
  std::vector<std::string> outliers;  // texts of no label
};
struct PretrainRequest : RunRequest {
  std::vector<std::string> texts;
  std::string vocab_from;
};

struct DistillRequest : RunRequest {
  std::vector<std::string> teachers;  // classifier files: one, or an ensemble
  std::vector<std::string> texts;     // unlabelled text files, one text per line
  std::string data;                   // labelled data (optional): gold labels, and texts too
  std::string cache;                  // the teachers' logits (default OUT.teacher-logits)
  std::int64_t augment = 0;           // new texts made from each --data text
  std::string augment_with;           // the encoder whose fill-mask guesses make them ("" = deletions)
  double temperature = 2, alpha = 0.5;
  bool no_calibration = false, min_count_given = false;
};

// How a run ended: finished and saved, or stopped by a signal (its
// checkpoint named in stop, unless the stop came where none is kept, which
// note then says).
struct RunOutcome {
  std::optional<Interrupted> stop;
  std::string note;
};

// What train and distill both record of their run: --data (with its
// fingerprint), --dev, --holdout, --out, --log and --no-calibration.
void record_labelled_run(RunRecord& record, std::string& data, RunRequest& request, TrainOptions& opt,
                         bool& no_calibration);

// The options and the checkpoint a run starts from: a resumed run takes its
// options from the checkpoint, a new one from the request; both then know
// their thread count (the split over threads shapes the arithmetic).
std::optional<Checkpoint> start_run(const RunRequest& request, TrainOptions& opt);

// Saves the finished model atomically, removes the run's checkpoint, and says
// what was saved: "saved OUT (best epoch N, METRIC X) in T".
void save_finished(const std::string& out, const Model& model, const TrainOptions& opt, const char* metric,
                   const char* metric_field, double seconds, Progress& progress);

// zibert train and zibert pretrain: start or resume the run, train, (for a
// classifier) calibrate on dev, and save; progress and what was saved go to
// stderr unless quiet.
RunOutcome train_run(const TrainRequest& request);
RunOutcome pretrain_run(const PretrainRequest& request);
// zibert distill: the teachers label every text once (cached), then the
// student trains on their soft probabilities and the gold labels.
RunOutcome distill_run(const DistillRequest& request);

}  // namespace zibert
