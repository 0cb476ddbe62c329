// Pretraining (zibert pretrain): BERT's masked-language-model objective on
// raw text, in the same loop as a classifier's training (train/loop.hpp).
#pragma once
#include <vector>

#include "zibert/base/progress.hpp"
#include "zibert/model/model_file.hpp"
#include "zibert/text/corpus.hpp"
#include "zibert/train/checkpoint.hpp"
#include "zibert/train/trainer_hooks.hpp"

namespace zibert {

inline constexpr double kMaskRate = 0.15;  // BERT's: of the characters, 15 % are chosen

// Pretrains an encoder on the texts of train, scoring the masked-LM loss and
// the masked-token accuracy on dev each epoch (masks drawn once for dev, so
// epochs compare); the epoch of lowest dev loss is kept. Consecutive lines
// are packed into sequences of max_len (train/packing.hpp); masks are drawn
// afresh each step from the seed.
// The vocabulary, shape and starting weights come from, in this order:
// resume's model; init's (an encoder, or a classifier whose encoder is taken
// with a fresh head); vocab (when given: the encoder keeps it, a later
// task's characters); else the training texts' characters with at least
// options.min_count occurrences, the options.max_vocab most frequent.
// init and resume give up their weights once training holds a copy
// (release_start).
Model pretrain_encoder(const std::vector<Corpus>& train, const Corpus& dev, const TrainOptions& options,
                            Progress& progress, Model* init = nullptr, const Vocab* vocab = nullptr,
                            Checkpoint* resume = nullptr, const TrainHooks& hooks = {});

}  // namespace zibert
