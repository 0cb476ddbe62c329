#include "zibert/train/trainer.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <set>

#include "zibert/infer/predictor.hpp"
#include "zibert/model/batch.hpp"
#include "zibert/nn/layers.hpp"
#include "zibert/train/classifier_data.hpp"
#include "zibert/train/metrics.hpp"
#include "zibert/train/multi_label_metrics.hpp"

namespace zibert {
namespace {

// ---- what a multi-label classifier optimises: one binary cross-entropy per label

// The dev set scored as zibert eval scores a multi-label model: the
// Predictor's label sets (P >= 0.5, else the most probable) against the gold
// ones. loss: the mean over texts of Σ_labels binary cross-entropy (P
// clamped to [1e-12, 1 − 1e-12]); accuracy: exact match; f1: micro-F1.
DevScore evaluate_multi_label(const Model& model, const DevSet& dev) {
  Predictor predictor(model, 0.5, true, Predictor::Weights::in_place);  // beside the training state
  const std::vector<Prediction> preds = predictor.predict_ids(dev.ids);
  const std::size_t k = model.classifier.labels.size();
  std::vector<std::uint8_t> predicted(preds.size() * k, 0);
  double loss_sum = 0;
  for (std::size_t i = 0; i < preds.size(); ++i) {
    for (std::int32_t label : preds[i].labels) predicted[i * k + static_cast<std::size_t>(label)] = 1;
    for (std::size_t c = 0; c < k; ++c) {
      const double p = std::clamp(double(preds[i].probs[c]), 1e-12, 1.0 - 1e-12);
      loss_sum -= std::log(dev.targets[i * k + c] ? p : 1.0 - p);
    }
  }
  const MultiLabelMetrics m = compute_multi_label_metrics(model.classifier.labels, dev.targets, predicted);
  return {loss_sum / double(preds.size()), m.exact_match, m.micro_f1};
}

class MultiLabelObjective : public LabelledObjective {
 public:
  MultiLabelObjective(SequenceSet train, DevSet dev) : LabelledObjective(std::move(train), std::move(dev), 0.0) {}
  DevScore evaluate(const Model& model) override { return evaluate_multi_label(model, dev()); }
  void describe(const DevScore& s, nlohmann::json& record) const override {
    record["dev_loss"] = s.loss;
    record["dev_exact_match"] = s.accuracy;
    record["dev_micro_f1"] = s.f1;
  }
  std::string summary(const DevScore& s) const override {
    return format_scores("dev loss %.4f  dev exact match %.4f  dev micro-F1 %.4f", s.loss, s.accuracy, s.f1);
  }
};

}  // namespace

float train_step(Bert<float>& net, AdamW<float>& adam, DataParallel<float>& runner, const Batch& batch,
                 const DropoutRng& rng, double lr) {
  return apply_step(net, adam, runner.train(net, batch, &rng), lr);
}

Model train_classifier(const Dataset& train, const Dataset& dev, const TrainOptions& opt, Progress& progress,
                            Model* init, Checkpoint* resume, const TrainHooks& hooks) {
  if (dev.rows.empty()) throw Error(dev.name + ": no dev examples to evaluate on");
  if (opt.epochs < 1 || opt.batch < 1 || opt.accumulate < 1)
    throw Error("epochs, batch and accumulate must be at least 1");
  // A resumed run continues the checkpoint's model: its vocabulary, labels and weights.
  const Model* base = resume ? &resume->model : init;
  const bool from_init = init != nullptr || (resume && resume->state().value("init", false));
  Tokenizer reader = base ? base->tokenizer : Tokenizer(Vocab(), Normalization{opt.lowercase, false});
  reader.set_replace_invalid(false);
  const auto train_texts = prepare_all(train, reader), dev_texts = prepare_all(dev, reader);
  std::int64_t added = 0;
  Model model = prepare_model(train, training_labels(train, base), train_texts, opt, base, added);
  SequenceSet tr = encode_all(train, train_texts, model);
  DevSet dv = encode_dev(dev, dev_texts, model);
  const std::size_t outliers = static_cast<std::size_t>(std::count(tr.labels.begin(), tr.labels.end(), kNoLabel));
  const std::size_t train_examples = tr.seqs.size() - outliers, dev_examples = dv.ids.size();
  // Characters the vocabulary lacks (an encoder's, when fine-tuning) become [UNK]: info reports how many.
  std::int64_t characters = 0, unknown = 0;
  const SpecialIds specials = model.tokenizer.specials();
  for (const auto& seq : tr.seqs)
    for (std::int32_t id : seq) {
      characters += !specials.contains(id) || id == specials.unk;
      unknown += id == specials.unk;
    }
  progress.message((resume ? "resuming training on " : "training on ") + std::to_string(train_examples) +
                   " examples (" + format_name(train.format) + "), dev " + std::to_string(dev_examples) + ", " +
                   std::to_string(opt.threads) + " threads");
  if (outliers > 0)
    progress.message("--outliers: " + std::to_string(outliers) +
                     " texts of no label, trained towards the uniform distribution over the labels");
  if (added > 0)
    progress.message("--extend-vocab: " + std::to_string(added) + " characters new to " +
                     (init ? "the starting model" : "the model") + " got rows of their own");
  else if (opt.extend_vocab && !resume)
    progress.message("--extend-vocab: no character of the data (seen --min-count times) was new to the starting model");
  if (init && unknown > 0)
    progress.message("note: " + std::to_string(unknown) + " of the " + std::to_string(characters) +
                     " training characters are not in the starting model's vocabulary and read as [UNK]" +
                     (opt.extend_vocab ? " (seen fewer than --min-count times)" : "; --extend-vocab gives them rows"));
  if (tr.truncated)
    progress.message("note: " + std::to_string(tr.truncated) + " training texts are longer than max-len " +
                     std::to_string(model.config.max_len) + " and were cut for training");

  std::unique_ptr<Objective> objective;
  if (model.config.multi_label && opt.label_smoothing != 0)
    throw Error("--label-smoothing smooths a softmax's targets; a multi-label model's sigmoids take none");
  if (model.config.multi_label)
    objective = std::make_unique<MultiLabelObjective>(std::move(tr), std::move(dv));
  else
    objective = std::make_unique<ClassifyObjective>(std::move(tr), std::move(dv), opt.label_smoothing);
  Loop loop(model, *objective, opt, progress, hooks);
  // Where the encoder came from: its pretraining record, or an imported checkpoint's origin.
  if (init && init->config.task == Task::mlm)
    loop.set_pretraining(init->training);
  else if (init && init->training.is_object() && init->training.contains("origin"))
    loop.set_pretraining({{"origin", init->training["origin"]}});
  else if (init && init->training.is_object() && init->training.contains("pretraining"))
    loop.set_pretraining(init->training["pretraining"]);
  if (resume) loop.restore(*resume);
  release_start(init, resume);
  loop.run(resume != nullptr, from_init);
  model.training =
      training_record(train, dev, train_examples, dev_examples, opt, loop, *objective, model.config.dropout);
  model.training["train_characters"] = characters;
  model.training["train_unknown_characters"] = unknown;
  if (opt.extend_vocab) model.training["vocab_added"] = added;
  if (opt.label_smoothing != 0) model.training["label_smoothing"] = opt.label_smoothing;
  if (opt.sound_only != 0) model.training["sound_only"] = opt.sound_only;
  if (outliers > 0) model.training["outliers"] = outliers;
  if (!loop.state().pretraining.is_null()) model.training["pretraining"] = loop.state().pretraining;
  if (opt.run.is_object() && opt.run.contains("imported_defaults"))
    model.training["imported_defaults"] = opt.run["imported_defaults"];
  return model;
}

}  // namespace zibert
