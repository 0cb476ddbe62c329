// Training: data → vocabulary → batches → AdamW steps, with dev evaluation
// every epoch and the best epoch's weights kept.
#pragma once
#include <cstdint>
#include <functional>
#include <string>

#include "zibert/base/error.hpp"
#include "zibert/base/progress.hpp"
#include "zibert/model/model_file.hpp"
#include "zibert/text/dataset.hpp"
#include "zibert/train/checkpoint.hpp"
#include "zibert/train/data_parallel.hpp"
#include "zibert/train/optimizer.hpp"

namespace zibert {

// Training stopped by a signal after `step`; the checkpoint (if any) is saved.
struct Interrupted : Error {
  Interrupted(int signal, std::int64_t step, std::string checkpoint)
      : Error("interrupted"), signal(signal), step(step), checkpoint(std::move(checkpoint)) {}
  int signal;
  std::int64_t step;
  std::string checkpoint;
};

// What the caller (the CLI, or a test) hooks into the loop. Neither is an
// option of the run: they are seams.
struct TrainHooks {
  // Polled after every step: a signal number asks to stop (checkpoint, Interrupted).
  std::function<int()> stop_signal;
  // Called with each step's number (1-based) and its loss, before the loss
  // is checked; tests use it to raise a signal at an exact step or to make a
  // loss non-finite.
  std::function<void(std::int64_t step, float& loss)> after_step;
};

// Trains on train, evaluates on dev each epoch; init (optional) supplies the
// starting weights, vocabulary and labels. resume (optional) continues a
// checkpoint's run exactly: the same options and data give the same model as
// an uninterrupted run.
Classifier train_classifier(const Dataset& train, const Dataset& dev, const TrainOptions& options,
                            Progress& progress, const Classifier* init = nullptr, const Checkpoint* resume = nullptr,
                            const TrainHooks& hooks = {});

// One optimisation step on a labelled batch: forward with dropout, backward,
// gradient clipping, AdamW at learning rate lr. A non-finite loss leaves the
// weights untouched. Returns the loss.
float train_step(Bert<float>& net, AdamW<float>& adam, DataParallel<float>& runner, const Batch& batch,
                 const DropoutRng& rng, double lr);

// The positive label guessed for a binary label set: "1", "true", "yes", "pos"
// or "positive" if present, else the second in sorted order.
std::string guess_positive(const std::vector<std::string>& labels);

}  // namespace zibert
