#include "zibert/train/classifier_data.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>

#include "zibert/base/world.hpp"
#include "zibert/infer/predictor.hpp"
#include "zibert/model/reading_channel.hpp"
#include "zibert/nn/layers.hpp"
#include "zibert/train/metrics.hpp"

namespace zibert {
namespace {

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

}  // namespace

std::string format_scores(const char* format, double a, double b, double c) {
  char buf[160];
  std::snprintf(buf, sizeof buf, format, a, b, c);
  return buf;
}

std::vector<std::vector<char32_t>> prepare_all(const Dataset& data, const Tokenizer& tokenizer) {
  std::vector<std::vector<char32_t>> out;
  out.reserve(data.rows.size());
  for (const Example& ex : data.rows) out.push_back(tokenizer.prepare(ex.text));
  return out;
}

std::string guess_positive(const std::vector<std::string>& labels) {
  for (const char* name : {"1", "true", "yes", "pos", "positive"})
    if (std::find(labels.begin(), labels.end(), name) != labels.end()) return name;
  return labels.size() == 2 ? labels[1] : "";
}

std::vector<std::string> training_labels(const Dataset& train, const Model* base) {
  if (base && base->config.task == Task::classify) return base->classifier.labels;
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

Model prepare_model(const Dataset& train, std::vector<std::string> labels,
                    const std::vector<std::vector<char32_t>>& texts, const TrainOptions& opt, const Model* base,
                    std::int64_t& added) {
  const bool from_encoder = base && base->config.task == Task::mlm;
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
  // The reading channel: the starting model's (its new characters' readings
  // added), or a new one when asked for.
  const TokenReadings* kept = base ? base->config.readings.get() : nullptr;
  const bool new_channel = opt.reading_channel && !kept;
  if (!opt.readings_table.empty() && !opt.reading_channel && !(kept && added > 0))
    throw Error("--readings names the table of --reading-channel, which is not on");
  if (opt.sound_only > 0 && !opt.reading_channel && !kept)
    throw Error("--sound-only leaves tokens to their readings: it needs --reading-channel (or a model with one)");
  if (new_channel || (kept && added > 0)) {
    const Readings table = Readings::load(opt.readings_table.empty() ? kDebianUnihanReadings : opt.readings_table);
    const std::vector<std::string> tokens =
        wordpiece ? base->tokenizer.wordpiece()->tokens() : vocab.tokens();
    config.readings = token_readings(tokens, table, kept);
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
  } else if (base && (added > 0 || new_channel)) {
    model.net.init_weights(opt.seed);  // the new rows
    copy_weights(base->net, model.net, /*encoder_only=*/false);
  } else if (base) {
    model.net.params() = base->net.params();
  } else {
    model.net.init_weights(opt.seed);
  }
  return model;
}

std::int32_t label_of(const Dataset& data, std::size_t i, const Model& model) {
  if (data.rows[i].outlier) return kNoLabel;
  const std::int32_t label = model.classifier.label_id(data.rows[i].label);
  if (label < 0)
    throw error_at(data.name, data.rows[i].line, "label \"" + data.rows[i].label + "\" is not among the training labels");
  return label;
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

DevScore evaluate(const Model& model, const DevSet& dev) {
  // Tables of the weights as they are now; no packed copy beside the training state.
  Predictor predictor(model, 0.5, true, Predictor::Weights::in_place);
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

void LabelledObjective::fill(Batch& batch, const std::vector<std::size_t>& members) const {
  batch = batch_of(train_, members);
  batch.label_smoothing = label_smoothing_;
}

float LabelledObjective::gradient(Bert<float>& net, DataParallel<float>& runner,
                                  const std::vector<std::size_t>& members, std::int64_t, const DropoutRng& rng) {
  fill(batch_, members);
  return runner.train(net, batch_, &rng);
}

void ClassifyObjective::describe(const DevScore& s, nlohmann::json& record) const {
  record["dev_loss"] = s.loss;
  record["dev_accuracy"] = s.accuracy;
  record["dev_macro_f1"] = s.f1;
}

std::string ClassifyObjective::summary(const DevScore& s) const {
  return format_scores("dev loss %.4f  dev acc %.4f  dev macro-F1 %.4f", s.loss, s.accuracy, s.f1);
}

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


}  // namespace zibert
