#include "zibert/train/trainer.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <set>

#include "zibert/infer/predictor.hpp"
#include "zibert/model/batch.hpp"
#include "zibert/nn/layers.hpp"
#include "zibert/train/metrics.hpp"
#include "zibert/train/multi_label_metrics.hpp"

namespace zibert {
namespace {


std::string fmt(const char* format, double a, double b, double c) {
  char buf[160];
  std::snprintf(buf, sizeof buf, format, a, b, c);
  return buf;
}

// ---- prepare: labels, vocabulary and initial weights

// Every text as the model's tokenizer reads it (tokenizer.prepare).
std::vector<std::vector<char32_t>> prepare_all(const Dataset& data, const Tokenizer& tokenizer) {
  std::vector<std::vector<char32_t>> out;
  out.reserve(data.rows.size());
  for (const Example& ex : data.rows) out.push_back(tokenizer.prepare(ex.text));
  return out;
}

// Labels sorted, from the training data (or the starting model's).
std::vector<std::string> training_labels(const Dataset& train, const Model* base) {
  if (base) return base->classifier.labels;
  std::set<std::string> seen;
  for (const Example& ex : train.rows)
    if (ex.outlier)
      continue;
    else if (train.multi_label)
      seen.insert(ex.labels.begin(), ex.labels.end());
    else
      seen.insert(ex.label);
  if (train.multi_label && seen.size() < 2)
    throw Error(train.name + ": the rows carry " + (seen.empty() ? "no label" : "one label only") +
                "; a multi-label classifier needs at least two labels");
  std::vector<std::string> labels(seen.begin(), seen.end());
  if (labels.size() < 2)
    throw Error(train.name + ": every row has the label \"" + labels.front() +
                "\"; a classifier needs examples of at least two labels (add negative examples)");
  return labels;
}

// The model training starts from: base's (a resumed run's or --init's)
// vocabulary, labels, shape and weights, else fresh ones from the data. An
// encoder as base (zibert pretrain's) gives the vocabulary, the shape and
// the encoder's weights; the labels come from the data, and the pooler and
// classifier start fresh.
Model prepare_model(const Dataset& train, const std::vector<std::vector<char32_t>>& texts,
                         const TrainOptions& opt, const Model* base, std::int64_t& added) {
  const bool from_encoder = base && base->config.task == Task::mlm;
  std::vector<std::string> labels = training_labels(train, from_encoder ? nullptr : base);
  // One sigmoid per label or one softmax: the starting classifier's, else as asked.
  const bool multi_label = base && !from_encoder ? base->config.multi_label : opt.shape.multi_label;
  if (multi_label != train.multi_label)
    throw Error(train.name + (multi_label ? ": read as single-label data for a multi-label model"
                                          : ": read as multi-label data for a single-label model"));
  // The positive label: as asked, else the starting classifier's, else guessed
  // from the labels; a multi-label model has none.
  if (multi_label && !opt.positive.empty()) throw Error("a multi-label model has no positive label (--positive)");
  std::string positive = multi_label                  ? ""
                         : !opt.positive.empty()      ? opt.positive
                         : base && !from_encoder      ? base->classifier.positive
                                                      : guess_positive(labels);
  if (!positive.empty() && std::find(labels.begin(), labels.end(), positive) == labels.end())
    throw Error("--positive " + positive + " is not one of the labels");
  Normalization norm{base ? base->tokenizer.normalization().lowercase : opt.lowercase, false};
  Vocab vocab;
  ModelConfig config = opt.shape;
  added = 0;
  const bool wordpiece = base && base->tokenizer.kind() == TokenizerKind::wordpiece;
  if (wordpiece && opt.extend_vocab) throw Error("--extend-vocab adds characters to zibert's vocabulary; this model's is WordPiece's");
  if (base) {
    vocab = base->tokenizer.vocab();
    config = base->config;
    config.dropout = opt.shape.dropout;
    if (opt.extend_vocab) {  // the data's characters the base lacks (seen --min-count times) get new rows
      VocabBuilder builder;
      for (const auto& t : texts) builder.add(t);
      std::vector<char32_t> chars = vocab.chars();
      const Vocab seen = builder.build(opt.min_count);
      for (char32_t c : seen.chars())
        if (!vocab.has_row(c)) chars.push_back(c), ++added;
      if (added > 0) {  // the base's variants stay, but for characters that now have rows of their own
        std::map<char32_t, char32_t> variants = vocab.variants();
        for (char32_t c : seen.chars()) variants.erase(c);
        vocab = Vocab(std::move(chars));
        vocab.set_variants(std::move(variants));
      }
      config.vocab_size = vocab.size();
    }
  } else {
    VocabBuilder builder;
    for (const auto& t : texts) builder.add(t);
    vocab = builder.build(opt.min_count);
    config.vocab_size = vocab.size();
  }
  config.task = Task::classify;  // an encoder's shape, a classifier's head (its pooler the encoder's, if kept)
  config.pooler = false;
  config.tie_decoder = true;
  config.labels = static_cast<std::int64_t>(labels.size());
  config.multi_label = multi_label;
  // How long texts' windows combine: as asked, else as the starting model did, else mean.
  const Windows windows = !opt.windows.empty() ? windows_from_name(opt.windows)
                          : base && base->classifier.windows ? *base->classifier.windows
                                                  : Windows::mean;
  Model model{config, Tokenizer(std::move(vocab), norm), ClassifierPart{labels, positive, windows, std::nullopt}, {},
              Bert<float>(config), std::nullopt};
  model.classifier.check_windows(model.config.multi_label);
  if (wordpiece) model.tokenizer = base->tokenizer;
  if (from_encoder) {
    model.net.init_weights(opt.seed);
    copy_encoder_weights(base->net, model.net);
  } else if (base && added > 0) {
    model.net.init_weights(opt.seed);  // the new rows
    copy_weights(base->net, model.net, /*encoder_only=*/false);
  } else if (base) {
    model.net.params() = base->net.params();
  } else {
    model.net.init_weights(opt.seed);
  }
  return model;
}

// Row i's label id (kNoLabel for an outlier); a label the model does not
// have is an error naming the row.
std::int32_t label_of(const Dataset& data, std::size_t i, const Model& model) {
  if (data.rows[i].outlier) return kNoLabel;
  const std::int32_t label = model.classifier.label_id(data.rows[i].label);
  if (label < 0)
    throw error_at(data.name, data.rows[i].line, "label \"" + data.rows[i].label + "\" is not among the training labels");
  return label;
}

// Row i's labels as (K) 0/1 (a multi-label row), with label_of's check.
std::vector<std::uint8_t> targets_of(const Dataset& data, std::size_t i, const Model& model) {
  if (data.rows[i].outlier)
    throw Error("--outliers trains a softmax towards the uniform distribution; a multi-label model's sigmoids have "
                "no such target (a text of no label is an empty label list in its data)");
  std::vector<std::uint8_t> out(model.classifier.labels.size(), 0);
  for (const std::string& name : data.rows[i].labels) {
    const std::int32_t label = model.classifier.label_id(name);
    if (label < 0) throw error_at(data.name, data.rows[i].line, "label \"" + name + "\" is not among the training labels");
    out[static_cast<std::size_t>(label)] = 1;
  }
  return out;
}

SequenceSet encode_all(const Dataset& data, const std::vector<std::vector<char32_t>>& texts, const Model& model) {
  SequenceSet out;
  out.specials = model.tokenizer.specials();
  for (std::size_t i = 0; i < data.rows.size(); ++i)
    if (data.multi_label)
      out.add(model.tokenizer.ids(texts[i]), targets_of(data, i, model), model.config.max_len);
    else
      out.add(model.tokenizer.ids(texts[i]), label_of(data, i, model), model.config.max_len);
  return out;
}

// The dev texts whole (windows cover the long ones) and their labels.
struct DevSet {
  std::vector<std::vector<std::int32_t>> ids;  // without [CLS]/[SEP]
  std::vector<std::int32_t> labels;            // single-label data
  std::vector<std::uint8_t> targets;           // multi-label data: (n, K) 0/1
};

DevSet encode_dev(const Dataset& data, const std::vector<std::vector<char32_t>>& texts, const Model& model) {
  DevSet out;
  for (std::size_t i = 0; i < data.rows.size(); ++i) {
    if (data.multi_label) {
      const std::vector<std::uint8_t> t = targets_of(data, i, model);
      out.targets.insert(out.targets.end(), t.begin(), t.end());
    } else {
      out.labels.push_back(label_of(data, i, model));
    }
    out.ids.push_back(model.tokenizer.ids(texts[i]));
  }
  return out;
}

// The dev set scored as zibert eval scores it: the Predictor's windows,
// combined as the model says, and compute_metrics. The loss is the mean of
// −log P(gold label) of those combined probabilities (floored at 1e-12).
DevScore evaluate(const Model& model, const DevSet& dev) {
  Predictor predictor(model);  // tables of the weights as they are now
  const std::vector<Prediction> preds = predictor.predict_ids(dev.ids);
  std::vector<std::int32_t> predicted;
  double loss_sum = 0;
  for (std::size_t i = 0; i < preds.size(); ++i) {
    predicted.push_back(preds[i].label);
    loss_sum -= std::log(std::max(double(preds[i].probs[dev.labels[i]]), 1e-12));
  }
  // Macro-F1: unlike the positive label's F1 it does not reward predicting
  // everything positive, so it is what picks the best epoch.
  const Metrics m = compute_metrics(model.classifier.labels, dev.labels, predicted, {});
  return {loss_sum / double(preds.size()), m.accuracy, m.macro_f1};
}

// ---- what a classifier optimises: cross-entropy of its labels

// What both kinds of classifier share: batches of the training set, the dev
// set, and the best epoch by its F1 (macro or micro), then its loss.
class LabelledObjective : public Objective {
 public:
  LabelledObjective(SequenceSet train, DevSet dev, double label_smoothing)
      : train_(std::move(train)), dev_(std::move(dev)), label_smoothing_(label_smoothing) {}
  const std::vector<std::int64_t>& lengths() const override { return train_.lengths; }
  float gradient(Bert<float>& net, DataParallel<float>& runner, const std::vector<std::size_t>& members,
                 std::int64_t, const DropoutRng& rng) override {
    batch_ = batch_of(train_, members);
    batch_.label_smoothing = label_smoothing_;
    return runner.train(net, batch_, &rng);
  }
  // F1 first (macro-F1 does not reward predicting everything positive;
  // micro-F1 counts every label decision), then the loss.
  bool better(const DevScore& now, const DevScore& best) const override {
    return now.f1 > best.f1 || (now.f1 == best.f1 && now.loss < best.loss);
  }

 protected:
  const DevSet& dev() const { return dev_; }

 private:
  const SequenceSet train_;
  const DevSet dev_;
  const double label_smoothing_;
  Batch batch_;
};

class ClassifyObjective : public LabelledObjective {
 public:
  using LabelledObjective::LabelledObjective;
  DevScore evaluate(const Model& model) override { return zibert::evaluate(model, dev()); }
  void describe(const DevScore& s, nlohmann::json& record) const override {
    record["dev_loss"] = s.loss;
    record["dev_accuracy"] = s.accuracy;
    record["dev_macro_f1"] = s.f1;
  }
  std::string summary(const DevScore& s) const override {
    return fmt("dev loss %.4f  dev acc %.4f  dev macro-F1 %.4f", s.loss, s.accuracy, s.f1);
  }
};

// ---- what a multi-label classifier optimises: one binary cross-entropy per label

// The dev set scored as zibert eval scores a multi-label model: the
// Predictor's label sets (P >= 0.5, else the most probable) against the gold
// ones. loss: the mean over texts of Σ_labels binary cross-entropy (P
// clamped to [1e-12, 1 − 1e-12]); accuracy: exact match; f1: micro-F1.
DevScore evaluate_multi_label(const Model& model, const DevSet& dev) {
  Predictor predictor(model);
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
    return fmt("dev loss %.4f  dev exact match %.4f  dev micro-F1 %.4f", s.loss, s.accuracy, s.f1);
  }
};

// What the saved model records of its training (file names without
// directories: the same data trained elsewhere gives the same bytes).
nlohmann::json training_record(const Dataset& train, const Dataset& dev, std::size_t train_examples,
                               std::size_t dev_examples, const TrainOptions& opt, const Loop& loop,
                               const Objective& objective, double dropout) {
  auto base_name = [](const std::string& path) { return path.substr(path.find_last_of('/') + 1); };
  const TrainState& s = loop.state();
  nlohmann::json record = {
          {"data", base_name(train.name)},  {"train_examples", train_examples},
          {"dev", base_name(dev.name)},     {"dev_examples", dev_examples},
          {"epochs", opt.epochs},           {"steps", loop.total_steps()},
          {"best_epoch", s.best_epoch},
          {"batch", opt.batch},             {"lr", opt.adam.lr},
          {"warmup", opt.warmup},           {"weight_decay", opt.adam.weight_decay},
          {"clip_norm", opt.adam.clip_norm}, {"dropout", dropout},
          {"seed", opt.seed},               {"min_count", opt.min_count},
          {"threads", world_threads(opt)},  {"init", s.init},
          {"history", s.history},           {"zibert_version", ZIBERT_VERSION}};
  if (opt.accumulate > 1) record["accumulate"] = opt.accumulate;
  objective.describe(s.best, record);  // the best epoch's dev scores
  return record;
}

}  // namespace

float train_step(Bert<float>& net, AdamW<float>& adam, DataParallel<float>& runner, const Batch& batch,
                 const DropoutRng& rng, double lr) {
  return apply_step(net, adam, runner.train(net, batch, &rng), lr);
}

std::string guess_positive(const std::vector<std::string>& labels) {
  for (const char* name : {"1", "true", "yes", "pos", "positive"})
    if (std::find(labels.begin(), labels.end(), name) != labels.end()) return name;
  return labels.size() == 2 ? labels[1] : "";
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
  Model model = prepare_model(train, train_texts, opt, base, added);
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
  if (outliers > 0) model.training["outliers"] = outliers;
  if (!loop.state().pretraining.is_null()) model.training["pretraining"] = loop.state().pretraining;
  if (opt.run.is_object() && opt.run.contains("imported_defaults"))
    model.training["imported_defaults"] = opt.run["imported_defaults"];
  return model;
}

}  // namespace zibert
