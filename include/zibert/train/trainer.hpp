// Training: data → vocabulary → batches → AdamW steps, with dev evaluation
// every epoch and the best epoch's weights kept.
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "zibert/text/dataset.hpp"
#include "zibert/base/error.hpp"
#include "zibert/model/model_file.hpp"
#include "zibert/train/optimizer.hpp"
#include "zibert/train/data_parallel.hpp"
#include "zibert/base/progress.hpp"

namespace zibert {

struct TrainOptions {
  ModelConfig shape;        // layers, heads, dim, ffn, max_len, dropout (vocab and labels come from data)
  std::int64_t epochs = 10;
  std::int64_t batch = 32;
  AdamWConfig adam;
  double warmup = 0.1;      // fraction of all steps spent warming up
  std::uint64_t seed = 42;
  std::int64_t min_count = 1;
  bool lowercase = false;
  std::string positive;     // positive label of a binary model; "" = guess
  int threads = 1;          // recorded in the model (results depend on it)
  std::string log_path;     // --log: one JSON line per evaluation ("" = none)
  // Interruption and resumption (train --resume):
  std::string checkpoint_path;          // written at each epoch's end and on a stop ("" = none)
  std::function<int()> stop_signal;     // polled after every step: a signal number asks to stop
  std::int64_t interrupt_at_step = -1;  // tests: raise interrupt_signal right after this step
  int interrupt_signal = 2;             // SIGINT
  std::int64_t nan_at_step = -1;        // tests: this step's loss comes out NaN (no update)
  nlohmann::json run;                   // the caller's own record, kept in checkpoints (data paths, out)
};

// Training stopped by a signal after `step`; the checkpoint (if any) is saved.
struct Interrupted : Error {
  Interrupted(int signal, std::int64_t step, std::string checkpoint)
      : Error("interrupted"), signal(signal), step(step), checkpoint(std::move(checkpoint)) {}
  int signal;
  std::int64_t step;
  std::string checkpoint;
};

// The options as a checkpoint records them, and back.
nlohmann::json options_json(const TrainOptions& options);
TrainOptions options_from_json(const nlohmann::json& j);

// How well a model does on labelled sequences, as training reports it.
struct DevScore {
  double loss = 0, accuracy = 0, f1 = 0;
};

// Trains on train, evaluates on dev each epoch; init (optional) supplies the
// starting weights, vocabulary and labels.
// resume (optional) continues a checkpoint's run exactly: the same options
// and data give the same model as an uninterrupted run.
Classifier train_classifier(const Dataset& train, const Dataset& dev, const TrainOptions& options,
                            Progress& progress, const Classifier* init = nullptr, const Checkpoint* resume = nullptr);

// One optimisation step on a labelled batch: forward with dropout, backward,
// gradient clipping, AdamW at learning rate lr. A non-finite loss leaves the
// weights untouched. Returns the loss.
float train_step(Bert<float>& net, AdamW<float>& adam, DataParallel<float>& runner, const Batch& batch,
                 const DropoutRng& rng, double lr);

// The positive label guessed for a binary label set: "1", "true", "yes", "pos"
// or "positive" if present, else the second in sorted order.
std::string guess_positive(const std::vector<std::string>& labels);

}  // namespace zibert
