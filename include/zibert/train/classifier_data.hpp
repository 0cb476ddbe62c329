// What every way of training a classifier shares (train, distill): the
// texts as the tokenizer reads them, the model training starts from, the
// dev set scored as zibert eval scores it, the objective of labelled
// batches, and the record the saved model keeps of its training.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "zibert/model/batch.hpp"
#include "zibert/model/model.hpp"
#include "zibert/text/dataset.hpp"
#include "zibert/train/checkpoint.hpp"
#include "zibert/train/loop.hpp"

namespace zibert {

// Every text as the model's tokenizer reads it (tokenizer.prepare).
std::vector<std::vector<char32_t>> prepare_all(const Dataset& data, const Tokenizer& tokenizer);

// The labels a classifier trained on train has, sorted: the data's, or
// base's when base is a classifier (a resumed run's, --init's).
std::vector<std::string> training_labels(const Dataset& train, const Model* base);

// The positive label guessed for a binary label set: "1", "true", "yes", "pos"
// or "positive" if present, else the second in sorted order.
std::string guess_positive(const std::vector<std::string>& labels);

// The model training starts from: base's (a resumed run's or --init's)
// vocabulary, shape and weights, else fresh ones built from texts (every
// text the run reads). An encoder as base (zibert pretrain's) gives the
// vocabulary, the shape and the encoder's weights; the pooler and classifier
// start fresh. labels are the classifier's; train names the data in errors
// and says whether it is multi-label. added counts --extend-vocab's new rows.
Model prepare_model(const Dataset& train, std::vector<std::string> labels,
                    const std::vector<std::vector<char32_t>>& texts, const TrainOptions& opt, const Model* base,
                    std::int64_t& added);

// Row i's label id (kNoLabel for an outlier); a label the model does not
// have is an error naming the row.
std::int32_t label_of(const Dataset& data, std::size_t i, const Model& model);

// The training rows, cut to max_len, with their labels (or label sets).
SequenceSet encode_all(const Dataset& data, const std::vector<std::vector<char32_t>>& texts, const Model& model);

// The dev texts whole (windows cover the long ones) and their labels.
struct DevSet {
  std::vector<std::vector<std::int32_t>> ids;  // without [CLS]/[SEP]
  std::vector<std::int32_t> labels;            // single-label data
  std::vector<std::uint8_t> targets;           // multi-label data: (n, K) 0/1
};
DevSet encode_dev(const Dataset& data, const std::vector<std::vector<char32_t>>& texts, const Model& model);

// The dev set scored as zibert eval scores it: the Predictor's windows,
// combined as the model says, and compute_metrics. The loss is the mean of
// −log P(gold label) of those combined probabilities (floored at 1e-12).
DevScore evaluate(const Model& model, const DevSet& dev);

// "dev loss %.4f …": a dev score's progress line from a format of three numbers.
std::string format_scores(const char* format, double a, double b, double c);

// What both kinds of classifier share: batches of the training set, the dev
// set, and the best epoch by its F1 (macro or micro), then its loss.
class LabelledObjective : public Objective {
 public:
  LabelledObjective(SequenceSet train, DevSet dev, double label_smoothing)
      : train_(std::move(train)), dev_(std::move(dev)), label_smoothing_(label_smoothing) {}
  const std::vector<std::int64_t>& lengths() const override { return train_.lengths; }
  float gradient(Bert<float>& net, DataParallel<float>& runner, const std::vector<std::size_t>& members,
                 std::int64_t step, const DropoutRng& rng) override;
  // F1 first (macro-F1 does not reward predicting everything positive;
  // micro-F1 counts every label decision), then the loss.
  bool better(const DevScore& now, const DevScore& best) const override {
    return now.f1 > best.f1 || (now.f1 == best.f1 && now.loss < best.loss);
  }

 protected:
  const DevSet& dev() const { return dev_; }
  const SequenceSet& train() const { return train_; }
  // The batch of these members with their labels, before the step runs it.
  virtual void fill(Batch& batch, const std::vector<std::size_t>& members) const;

 private:
  const SequenceSet train_;
  const DevSet dev_;
  const double label_smoothing_;
  Batch batch_;
};

// A single-label classifier's: cross-entropy of its labels; dev scored by
// accuracy and macro-F1.
class ClassifyObjective : public LabelledObjective {
 public:
  using LabelledObjective::LabelledObjective;
  DevScore evaluate(const Model& model) override { return zibert::evaluate(model, dev()); }
  void describe(const DevScore& s, nlohmann::json& record) const override;
  std::string summary(const DevScore& s) const override;
};

// What the saved model records of its training (file names without
// directories: the same data trained elsewhere gives the same bytes).
nlohmann::json training_record(const Dataset& train, const Dataset& dev, std::size_t train_examples,
                               std::size_t dev_examples, const TrainOptions& opt, const Loop& loop,
                               const Objective& objective, double dropout);

}  // namespace zibert
