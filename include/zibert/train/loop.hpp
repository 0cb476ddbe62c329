// The training loop every objective shares: epochs of AdamW steps in a seeded
// batch order, a dev score after each epoch with the best epoch's weights
// kept, progress, the JSONL log, checkpoints and their exact resumption.
// What is optimised (a classifier's cross-entropy, the masked-LM loss) is an
// Objective; the loop knows nothing of labels or masks.
#pragma once
#include <chrono>
#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include "zibert/base/progress.hpp"
#include "zibert/model/model_file.hpp"
#include "zibert/train/checkpoint.hpp"
#include "zibert/train/data_parallel.hpp"
#include "zibert/train/optimizer.hpp"
#include "zibert/train/trainer_hooks.hpp"

namespace zibert {

class Objective {
 public:
  virtual ~Objective() = default;
  // Training sequences per epoch, and their lengths (specials included).
  virtual const std::vector<std::int64_t>& lengths() const = 0;
  // Forward and backward of the batch of these members into net.grads();
  // step is the 0-based step number. Returns the mean loss.
  virtual float gradient(Bert<float>& net, DataParallel<float>& runner, const std::vector<std::size_t>& members,
                         std::int64_t step, const DropoutRng& rng) = 0;
  virtual DevScore evaluate(const Model& model) = 0;
  // Whether now beats the best so far.
  virtual bool better(const DevScore& now, const DevScore& best) const = 0;
  // The dev score's fields in the history and the log, and its progress line.
  virtual void describe(const DevScore& score, nlohmann::json& record) const = 0;
  virtual std::string summary(const DevScore& score) const = 0;
};

// Clips the gradient and takes an AdamW step, unless the loss is not finite
// (the weights are then left untouched). Returns the loss.
float apply_step(Bert<float>& net, AdamW<float>& adam, float loss, double lr);

// Frees the weights of the model a run started from (--init) and a
// checkpoint's arrays (--resume) once the model being trained and the loop
// hold their copies: at bert-base's shape each array is 408 MB. Their other
// fields stay; their weights are then empty.
void release_start(Model* init, Checkpoint* resume);

class Loop {
 public:
  Loop(Model& model, Objective& objective, const TrainOptions& opt, Progress& progress, const TrainHooks& hooks);
  // Continues a checkpoint's run where it stopped.
  void restore(const Checkpoint& resume);
  // All epochs (from where a restored state stands); leaves the best epoch's weights in the model.
  void run(bool resumed, bool from_init);
  const TrainState& state() const { return state_; }
  // What the run records of the encoder it started from (kept in checkpoints).
  void set_pretraining(const nlohmann::json& record) { state_.pretraining = record; }
  std::int64_t total_steps() const { return total_; }

 private:
  using Clock = std::chrono::steady_clock;
  void open_log(bool append);
  double examples_per_s() const;
  void run_epoch(std::int64_t epoch);
  Error diverged(std::int64_t epoch) const;
  void score_epoch(std::int64_t epoch);
  void save();

  Model& model_;
  Objective& objective_;
  const TrainOptions& opt_;
  Progress& progress_;
  const TrainHooks& hooks_;
  AdamW<float> adam_;
  DataParallel<float> runner_;
  AlignedVector<float> best_params_;
  TrainState state_;
  std::int64_t examples_ = 0, total_ = 0, warmup_ = 0, examples_at_start_ = 0, steps_at_start_ = 0;
  double lr_ = 0;
  Clock::time_point started_;
  std::ofstream log_;
};

}  // namespace zibert
