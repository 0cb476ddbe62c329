#include "zibert/train/trainer.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <set>

#include "zibert/infer/predictor.hpp"
#include "zibert/model/batch.hpp"
#include "zibert/train/metrics.hpp"

namespace zibert {
namespace {

using Clock = std::chrono::steady_clock;

std::string fmt(const char* format, double a, double b, double c) {
  char buf[160];
  std::snprintf(buf, sizeof buf, format, a, b, c);
  return buf;
}

// ---- prepare: labels, vocabulary and initial weights

std::vector<std::vector<char32_t>> normalize_all(const Dataset& data, const Normalization& norm) {
  std::vector<std::vector<char32_t>> out;
  out.reserve(data.rows.size());
  for (const Example& ex : data.rows) out.push_back(normalize(ex.text, norm));
  return out;
}

// Labels sorted, from the training data (or the starting model's).
std::vector<std::string> training_labels(const Dataset& train, const Classifier* base) {
  if (base) return base->labels;
  std::set<std::string> seen;
  for (const Example& ex : train.rows) seen.insert(ex.label);
  std::vector<std::string> labels(seen.begin(), seen.end());
  if (labels.size() < 2)
    throw Error(train.name + ": every row has the label \"" + labels.front() +
                "\"; a classifier needs examples of at least two labels (add negative examples)");
  return labels;
}

// The model training starts from: base's (a resumed run's or --init's)
// vocabulary, labels, shape and weights, else fresh ones from the data.
Classifier prepare_model(const Dataset& train, const std::vector<std::vector<char32_t>>& texts,
                         const TrainOptions& opt, const Classifier* base) {
  std::vector<std::string> labels = training_labels(train, base);
  std::string positive = opt.positive.empty() ? (base ? base->positive : guess_positive(labels)) : opt.positive;
  if (!positive.empty() && std::find(labels.begin(), labels.end(), positive) == labels.end())
    throw Error("--positive " + positive + " is not one of the labels");
  Normalization norm{base ? base->tokenizer.normalization().lowercase : opt.lowercase, false};
  Vocab vocab;
  ModelConfig config = opt.shape;
  if (base) {
    vocab = base->tokenizer.vocab();
    config = base->config;
    config.dropout = opt.shape.dropout;
  } else {
    VocabBuilder builder;
    for (const auto& t : texts) builder.add(t);
    vocab = builder.build(opt.min_count);
    config.vocab_size = vocab.size();
    config.labels = static_cast<std::int64_t>(labels.size());
  }
  // How long texts' windows combine: as asked, else as the starting model did, else mean.
  const Windows windows = !opt.windows.empty() ? windows_from_name(opt.windows)
                          : base && base->windows ? *base->windows
                                                  : Windows::mean;
  Classifier model{config, Tokenizer(std::move(vocab), norm), labels, positive, {}, Bert<float>(config), windows};
  model.check_windows();
  if (base)
    model.net.params() = base->net.params();
  else
    model.net.init_weights(opt.seed);
  return model;
}

// Row i's label id; a label the model does not have is an error naming the row.
std::int32_t label_of(const Dataset& data, std::size_t i, const Classifier& model) {
  const std::int32_t label = model.label_id(data.rows[i].label);
  if (label < 0)
    throw error_at(data.name, data.rows[i].line, "label \"" + data.rows[i].label + "\" is not among the training labels");
  return label;
}

SequenceSet encode_all(const Dataset& data, const std::vector<std::vector<char32_t>>& texts, const Classifier& model) {
  SequenceSet out;
  for (std::size_t i = 0; i < data.rows.size(); ++i)
    out.add(model.tokenizer.ids(texts[i]), label_of(data, i, model), model.config.max_len);
  return out;
}

// The dev texts whole (windows cover the long ones) and their labels.
struct DevSet {
  std::vector<std::vector<std::int32_t>> ids;  // without [CLS]/[SEP]
  std::vector<std::int32_t> labels;
};

DevSet encode_dev(const Dataset& data, const std::vector<std::vector<char32_t>>& texts, const Classifier& model) {
  DevSet out;
  for (std::size_t i = 0; i < data.rows.size(); ++i) {
    out.labels.push_back(label_of(data, i, model));
    out.ids.push_back(model.tokenizer.ids(texts[i]));
  }
  return out;
}

// The dev set scored as zibert eval scores it: the Predictor's windows,
// combined as the model says, and compute_metrics. The loss is the mean of
// −log P(gold label) of those combined probabilities (floored at 1e-12).
DevScore evaluate(const Classifier& model, const DevSet& dev) {
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
  const Metrics m = compute_metrics(model.labels, dev.labels, predicted, {});
  return {loss_sum / double(preds.size()), m.accuracy, m.macro_f1};
}

// ---- the loop: epochs of AdamW steps, a dev score after each

class Loop {
 public:
  Loop(Classifier& model, SequenceSet train, DevSet dev, const TrainOptions& opt, Progress& progress,
       const TrainHooks& hooks)
      : model_(model), train_(std::move(train)), dev_(std::move(dev)), opt_(opt), progress_(progress),
        hooks_(hooks), adam_(opt.adam, model.net.layout()), runner_(opt.threads), best_params_(model.net.params()) {
    state_.per_epoch = (static_cast<std::int64_t>(train_.seqs.size()) + opt.batch - 1) / opt.batch;
    total_ = state_.per_epoch * opt.epochs;
    warmup_ = static_cast<std::int64_t>(std::llround(opt.warmup * double(total_)));
  }

  // Continues a checkpoint's run where it stopped.
  void restore(const Checkpoint& resume) {
    const TrainState saved = TrainState::from_json(resume.state());
    if (saved.per_epoch != state_.per_epoch)
      throw Error("the training data differ from the checkpoint's (" + std::to_string(state_.per_epoch) +
                  " batches per epoch, the checkpoint has " + std::to_string(saved.per_epoch) + ")");
    if (saved.epoch < 1 || saved.epoch > opt_.epochs || saved.batch < 0 || saved.batch > saved.per_epoch ||
        saved.step < 0 || saved.step > total_)
      throw Error("the checkpoint's training state is out of range");
    state_ = saved;
    adam_.m().assign(resume.adam_m.begin(), resume.adam_m.end());
    adam_.v().assign(resume.adam_v.begin(), resume.adam_v.end());
    adam_.set_steps(state_.step);
    best_params_.assign(resume.best.begin(), resume.best.end());
  }

  void run(bool resumed, bool from_init) {
    state_.init = from_init;
    open_log(resumed);
    started_ = Clock::now();
    examples_at_start_ = state_.examples_seen;
    for (std::int64_t epoch = state_.epoch; epoch <= opt_.epochs; ++epoch) {
      run_epoch(epoch);
      score_epoch(epoch);
    }
    progress_.finish();
    model_.net.params() = best_params_;
  }

  const TrainState& state() const { return state_; }
  std::int64_t total_steps() const { return total_; }

 private:
  void open_log(bool append) {
    if (opt_.log_path.empty()) return;
    log_.open(opt_.log_path, append ? std::ios::app : std::ios::trunc);
    if (!log_) throw Error(opt_.log_path + ": cannot open the log for writing");
  }

  double examples_per_s() const {
    const double secs = std::chrono::duration<double>(Clock::now() - started_).count();
    return secs > 0 ? double(state_.examples_seen - examples_at_start_) / secs : 0.0;
  }

  // The batches of the epoch in its seeded order, from where the state says.
  void run_epoch(std::int64_t epoch) {
    std::uint64_t epoch_seed = opt_.seed * 1000003ULL + static_cast<std::uint64_t>(epoch);
    const auto plan = bucketed_batches(train_.lengths, static_cast<std::size_t>(opt_.batch), &epoch_seed);
    for (auto bi = static_cast<std::size_t>(state_.batch); bi < plan.size(); ++bi) {
      const Batch batch = batch_of(train_, plan[bi]);
      const DropoutRng rng{opt_.seed, static_cast<std::uint64_t>(state_.step), model_.config.dropout};
      lr_ = opt_.adam.lr * lr_multiplier(state_.step, warmup_, total_);
      float loss = train_step(model_.net, adam_, runner_, batch, rng, lr_);
      if (hooks_.after_step) hooks_.after_step(state_.step + 1, loss);
      if (!std::isfinite(loss)) throw diverged(epoch);
      ++state_.step;
      ++state_.batch;
      state_.examples_seen += batch.size;
      state_.epoch_loss += loss * double(batch.size);
      progress_.update({epoch, opt_.epochs, state_.step, total_, loss, lr_, examples_per_s()});
      if (int sig = hooks_.stop_signal ? hooks_.stop_signal() : 0) {
        progress_.finish();
        if (!opt_.checkpoint_path.empty()) save();
        throw Interrupted(sig, state_.step, opt_.checkpoint_path);
      }
    }
  }

  Error diverged(std::int64_t epoch) const {
    std::string kept = opt_.checkpoint_path.empty() ? ""
                       : epoch > 1 ? "; the last good checkpoint, from the end of epoch " + std::to_string(epoch - 1) +
                                         ", is " + opt_.checkpoint_path
                                   : "; no checkpoint yet (the first epoch had not ended)";
    return Error("training diverged: the loss is not finite at step " + std::to_string(state_.step + 1) +
                 " (try a lower --lr)" + kept);
  }

  // Scores the dev set, keeps the best epoch, logs, and checkpoints the start of the next.
  void score_epoch(std::int64_t epoch) {
    const DevScore score = evaluate(model_, dev_);
    const bool improved = state_.best_epoch == 0 || score.f1 > state_.best.f1 ||
                          (score.f1 == state_.best.f1 && score.loss < state_.best.loss);
    if (improved) {
      state_.best = score;
      state_.best_epoch = epoch;
      best_params_ = model_.net.params();
    }
    const double train_loss = state_.epoch_loss / double(train_.seqs.size());
    state_.history.push_back({{"epoch", epoch}, {"step", state_.step}, {"train_loss", train_loss},
                              {"dev_loss", score.loss}, {"dev_accuracy", score.accuracy},
                              {"dev_macro_f1", score.f1}});
    if (log_.is_open()) {  // timings vary between runs, so they go to the log, not into the model
      nlohmann::json record = state_.history.back();
      record["lr"] = lr_;
      record["examples_per_s"] = examples_per_s();
      log_ << record.dump() << '\n' << std::flush;
      if (!log_) throw Error(opt_.log_path + ": write failed");
    }
    progress_.message("epoch " + std::to_string(epoch) + "/" + std::to_string(opt_.epochs) +
                      fmt("  train loss %.4f  dev loss %.4f  dev acc %.4f", train_loss, score.loss, score.accuracy) +
                      fmt("  dev macro-F1 %.4f", score.f1, 0, 0) + (improved ? "  (best)" : ""));
    state_.epoch = epoch + 1;
    state_.batch = 0;
    state_.epoch_loss = 0;
    // Each finished epoch is a point to resume from, also after a crash.
    if (!opt_.checkpoint_path.empty() && epoch < opt_.epochs) save();
  }

  void save() {
    Checkpoint c{model_, {adam_.m().begin(), adam_.m().end()}, {adam_.v().begin(), adam_.v().end()},
                 {best_params_.begin(), best_params_.end()}};
    c.model.training = {{"checkpoint", state_.to_json(opt_)}};
    save_checkpoint(opt_.checkpoint_path, c);
  }

  Classifier& model_;
  const SequenceSet train_;
  const DevSet dev_;
  const TrainOptions& opt_;
  Progress& progress_;
  const TrainHooks& hooks_;
  AdamW<float> adam_;
  DataParallel<float> runner_;
  AlignedVector<float> best_params_;
  TrainState state_;
  std::int64_t total_ = 0, warmup_ = 0, examples_at_start_ = 0;
  double lr_ = 0;
  Clock::time_point started_;
  std::ofstream log_;
};

// What the saved model records of its training (file names without
// directories: the same data trained elsewhere gives the same bytes).
nlohmann::json training_record(const Dataset& train, const Dataset& dev, std::size_t train_examples,
                               std::size_t dev_examples, const TrainOptions& opt, const Loop& loop, double dropout) {
  auto base_name = [](const std::string& path) { return path.substr(path.find_last_of('/') + 1); };
  const TrainState& s = loop.state();
  return {{"data", base_name(train.name)},  {"train_examples", train_examples},
          {"dev", base_name(dev.name)},     {"dev_examples", dev_examples},
          {"epochs", opt.epochs},           {"steps", loop.total_steps()},
          {"best_epoch", s.best_epoch},     {"dev_loss", s.best.loss},
          {"dev_accuracy", s.best.accuracy}, {"dev_macro_f1", s.best.f1},
          {"batch", opt.batch},             {"lr", opt.adam.lr},
          {"warmup", opt.warmup},           {"weight_decay", opt.adam.weight_decay},
          {"clip_norm", opt.adam.clip_norm}, {"dropout", dropout},
          {"seed", opt.seed},               {"min_count", opt.min_count},
          {"threads", opt.threads},         {"init", s.init},
          {"history", s.history},           {"zibert_version", ZIBERT_VERSION}};
}

}  // namespace

float train_step(Bert<float>& net, AdamW<float>& adam, DataParallel<float>& runner, const Batch& batch,
                 const DropoutRng& rng, double lr) {
  float loss = runner.train(net, batch, &rng);
  if (!std::isfinite(loss)) return loss;
  clip_grad_norm(net.grads(), adam.config().clip_norm);
  adam.step(net.params(), net.grads(), lr);
  return loss;
}

std::string guess_positive(const std::vector<std::string>& labels) {
  for (const char* name : {"1", "true", "yes", "pos", "positive"})
    if (std::find(labels.begin(), labels.end(), name) != labels.end()) return name;
  return labels.size() == 2 ? labels[1] : "";
}

Classifier train_classifier(const Dataset& train, const Dataset& dev, const TrainOptions& opt, Progress& progress,
                            const Classifier* init, const Checkpoint* resume, const TrainHooks& hooks) {
  if (dev.rows.empty()) throw Error(dev.name + ": no dev examples to evaluate on");
  if (opt.epochs < 1 || opt.batch < 1) throw Error("epochs and batch must be at least 1");
  // A resumed run continues the checkpoint's model: its vocabulary, labels and weights.
  const Classifier* base = resume ? &resume->model : init;
  const bool from_init = init != nullptr || (resume && resume->state().value("init", false));
  const Normalization norm{base ? base->tokenizer.normalization().lowercase : opt.lowercase, false};
  const auto train_texts = normalize_all(train, norm), dev_texts = normalize_all(dev, norm);
  Classifier model = prepare_model(train, train_texts, opt, base);
  SequenceSet tr = encode_all(train, train_texts, model);
  DevSet dv = encode_dev(dev, dev_texts, model);
  const std::size_t train_examples = tr.seqs.size(), dev_examples = dv.ids.size();
  progress.message((resume ? "resuming training on " : "training on ") + std::to_string(train_examples) +
                   " examples (" + format_name(train.format) + "), dev " + std::to_string(dev_examples) + ", " +
                   std::to_string(opt.threads) + " threads");
  if (tr.truncated)
    progress.message("note: " + std::to_string(tr.truncated) + " training texts are longer than max-len " +
                     std::to_string(model.config.max_len) + " and were cut for training");

  Loop loop(model, std::move(tr), std::move(dv), opt, progress, hooks);
  if (resume) loop.restore(*resume);
  loop.run(resume != nullptr, from_init);
  model.training = training_record(train, dev, train_examples, dev_examples, opt, loop, model.config.dropout);
  return model;
}

}  // namespace zibert
