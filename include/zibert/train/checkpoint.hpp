// Where a training run is, as the checkpoint records it: TrainState to and
// from JSON, and the options that started the run. With the weights, AdamW's
// moments and the best epoch's weights (model/model_file.hpp's Checkpoint),
// it is all --resume needs to continue exactly.
#pragma once
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>

#include "zibert/model/config.hpp"
#include "zibert/train/optimizer.hpp"

namespace zibert {

struct TrainOptions {
  ModelConfig shape;        // layers, heads, dim, ffn, max_len, dropout (vocab and labels come from data)
  std::int64_t epochs = 10;
  std::int64_t batch = 32;
  std::int64_t accumulate = 1;  // rounds per step: a step's batch is batch × accumulate sequences
  AdamWConfig adam;
  double warmup = 0.1;      // fraction of all steps spent warming up
  std::uint64_t seed = 42;
  std::int64_t min_count = 1;
  std::int64_t max_vocab = 0;  // pretrain --vocab-size: at most this many ids, specials included (0 = no bound)
  bool lowercase = false;
  bool extend_vocab = false;  // train --init --extend-vocab: characters new to the starting model get rows
  bool reading_channel = false;  // train --reading-channel: each character's syllables join its embedding
  std::string readings_table;    // --readings: the table they come from ("" = Debian's Unihan)
  double sound_only = 0;         // --sound-only P: the share of tokens read by their readings alone in training
  std::string positive;     // positive label of a binary model; "" = guess
  double label_smoothing = 0;  // train --label-smoothing ε (single-label models)
  std::string windows;      // how a long text's windows combine: max, mean, first; "" = the starting model's, else mean
  int threads = 1;          // recorded in the model (results depend on it)
  std::string log_path;     // --log: one JSON line per evaluation ("" = none)
  std::string checkpoint_path;  // written at each epoch's end and on a stop ("" = none)
  nlohmann::json run;       // the caller's own record, kept in checkpoints (data paths, out)
};

// The threads the results depend on, as a model records them: the parts
// each batch is split into, opt.threads on each of World's ranks (a run over
// R ranks of T threads computes what one process of R·T threads does).
int world_threads(const TrainOptions& opt);
// The sequences one optimizer step sees: --batch of them per round, --accumulate rounds.
std::int64_t step_batch(const TrainOptions& opt);

// The options as a checkpoint records them, and back. The shape is
// config_to_json's form, the one JSON form of a ModelConfig.
nlohmann::json options_json(const TrainOptions& options);
TrainOptions options_from_json(const nlohmann::json& j);

// How well a model does on the dev set, as training reports it.
struct DevScore {
  double loss = 0, accuracy = 0, f1 = 0;
};

struct TrainState {
  bool init = false;             // the run started from a model (train --init)
  std::int64_t per_epoch = 0;    // batches per epoch
  std::int64_t step = 0;         // steps done
  std::int64_t epoch = 1;        // the epoch under way (1-based)
  std::int64_t batch = 0;        // batches of it done
  double epoch_loss = 0;         // its summed example losses so far
  std::int64_t best_epoch = 0;   // 0 until an epoch has been scored
  DevScore best;
  nlohmann::json history = nlohmann::json::array();  // one record per scored epoch
  std::int64_t examples_seen = 0;
  nlohmann::json pretraining;    // the starting encoder's own record (fine-tuning from zibert pretrain's), or null

  // {"options": …, "run": …, and the fields above}; throws Error when the
  // JSON is damaged or out of range for total steps and epochs.
  nlohmann::json to_json(const TrainOptions& options) const;
  static TrainState from_json(const nlohmann::json& j);
};

}  // namespace zibert
