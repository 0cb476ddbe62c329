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
#include "zibert/train/loop.hpp"
#include "zibert/train/optimizer.hpp"
#include "zibert/train/trainer_hooks.hpp"

namespace zibert {

// Trains on train, evaluates on dev each epoch; init (optional) supplies the
// starting weights, vocabulary and labels. resume (optional) continues a
// checkpoint's run exactly: the same options and data give the same model as
// an uninterrupted run. Both give up their weights once training holds a
// copy (release_start).
Model train_classifier(const Dataset& train, const Dataset& dev, const TrainOptions& options,
                            Progress& progress, Model* init = nullptr, Checkpoint* resume = nullptr,
                            const TrainHooks& hooks = {});

// One optimisation step on a labelled batch: forward with dropout, backward,
// gradient clipping, AdamW at learning rate lr. A non-finite loss leaves the
// weights untouched. Returns the loss.
float train_step(Bert<float>& net, AdamW<float>& adam, DataParallel<float>& runner, const Batch& batch,
                 const DropoutRng& rng, double lr);

}  // namespace zibert
