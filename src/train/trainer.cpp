#include "zibert/train/trainer.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <csignal>
#include <limits>
#include <set>

#include "zibert/model/batch.hpp"

namespace zibert {
namespace {

SequenceSet encode_all(const Dataset& data, const std::vector<std::vector<char32_t>>& texts, const Classifier& model) {
  SequenceSet out;
  for (std::size_t i = 0; i < data.rows.size(); ++i) {
    std::int32_t label = model.label_id(data.rows[i].label);
    if (label < 0)
      throw error_at(data.name, data.rows[i].line,
                     "label \"" + data.rows[i].label + "\" is not among the training labels");
    out.add(model.tokenizer.ids(texts[i]), label, model.config.max_len);
  }
  return out;
}

std::vector<std::vector<char32_t>> normalize_all(const Dataset& data, const Normalization& norm) {
  std::vector<std::vector<char32_t>> out;
  out.reserve(data.rows.size());
  for (const Example& ex : data.rows) out.push_back(normalize(ex.text, norm));
  return out;
}

DevScore evaluate(const Classifier& model, const SequenceSet& dev, std::int64_t batch_size, ModelCache<float>& cache) {
  DevScore score;
  std::vector<std::int32_t> predicted(dev.labels.size());
  double loss_sum = 0;
  for (const auto& members : bucketed_batches(dev.lengths, static_cast<std::size_t>(batch_size), nullptr)) {
    Batch batch = batch_of(dev, members);
    loss_sum += double(model.net.forward(batch, cache, nullptr)) * double(members.size());
    CMatMap<float> probs(cache.probs.data.data(), batch.size, model.config.labels);
    for (std::size_t r = 0; r < members.size(); ++r) {
      Index best = 0;
      probs.row(static_cast<Index>(r)).maxCoeff(&best);
      predicted[members[r]] = static_cast<std::int32_t>(best);
    }
  }
  const std::size_t n = dev.labels.size();
  std::int64_t correct = 0;
  for (std::size_t i = 0; i < n; ++i) correct += predicted[i] == dev.labels[i];
  score.loss = loss_sum / double(n);
  score.accuracy = double(correct) / double(n);
  // Macro-F1: unlike the positive label's F1 it does not reward predicting
  // everything positive, so it is what picks the best epoch.
  for (std::int32_t c = 0; c < model.config.labels; ++c) {
    std::int64_t tp = 0, fp = 0, fn = 0;
    for (std::size_t i = 0; i < n; ++i) {
      tp += predicted[i] == c && dev.labels[i] == c;
      fp += predicted[i] == c && dev.labels[i] != c;
      fn += predicted[i] != c && dev.labels[i] == c;
    }
    double f1 = tp ? 2.0 * double(tp) / double(2 * tp + fp + fn) : 0.0;
    score.f1 += f1 / double(model.config.labels);
  }
  return score;
}

std::string fmt(const char* format, double a, double b, double c) {
  char buf[160];
  std::snprintf(buf, sizeof buf, format, a, b, c);
  return buf;
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

nlohmann::json options_json(const TrainOptions& o) {
  return {{"epochs", o.epochs},         {"batch", o.batch},
          {"lr", o.adam.lr},            {"beta1", o.adam.beta1},
          {"beta2", o.adam.beta2},      {"eps", o.adam.eps},
          {"weight_decay", o.adam.weight_decay}, {"clip_norm", o.adam.clip_norm},
          {"warmup", o.warmup},         {"seed", o.seed},
          {"min_count", o.min_count},   {"lowercase", o.lowercase},
          {"positive", o.positive},     {"threads", o.threads},
          {"dropout", o.shape.dropout}, {"layers", o.shape.layers},
          {"heads", o.shape.heads},     {"dim", o.shape.dim},
          {"ffn", o.shape.ffn},         {"max_len", o.shape.max_len},
          {"tie_qk", o.shape.tie_qk},   {"position", o.shape.position}};
}

TrainOptions options_from_json(const nlohmann::json& j) {
  TrainOptions o;
  o.epochs = j.at("epochs").get<std::int64_t>();
  o.batch = j.at("batch").get<std::int64_t>();
  o.adam.lr = j.at("lr").get<double>();
  o.adam.beta1 = j.at("beta1").get<double>();
  o.adam.beta2 = j.at("beta2").get<double>();
  o.adam.eps = j.at("eps").get<double>();
  o.adam.weight_decay = j.at("weight_decay").get<double>();
  o.adam.clip_norm = j.at("clip_norm").get<double>();
  o.warmup = j.at("warmup").get<double>();
  o.seed = j.at("seed").get<std::uint64_t>();
  o.min_count = j.at("min_count").get<std::int64_t>();
  o.lowercase = j.at("lowercase").get<bool>();
  o.positive = j.at("positive").get<std::string>();
  o.threads = j.at("threads").get<int>();
  o.shape.dropout = j.at("dropout").get<double>();
  o.shape.layers = j.at("layers").get<std::int64_t>();
  o.shape.heads = j.at("heads").get<std::int64_t>();
  o.shape.dim = j.at("dim").get<std::int64_t>();
  o.shape.ffn = j.at("ffn").get<std::int64_t>();
  o.shape.max_len = j.at("max_len").get<std::int64_t>();
  o.shape.tie_qk = j.at("tie_qk").get<bool>();
  o.shape.position = j.at("position").get<bool>();
  return o;
}

Classifier train_classifier(const Dataset& train, const Dataset& dev, const TrainOptions& opt, Progress& progress,
                            const Classifier* init, const Checkpoint* resume) {
  if (dev.rows.empty()) throw Error(dev.name + ": no dev examples to evaluate on");
  if (opt.epochs < 1 || opt.batch < 1) throw Error("epochs and batch must be at least 1");
  // A resumed run continues the checkpoint's model: its vocabulary, labels and weights.
  const Classifier* base = resume ? &resume->model : init;
  const bool from_init = init != nullptr || (resume && resume->state().value("init", false));

  // Labels: sorted, from the training data (or the initial model's).
  std::vector<std::string> labels;
  if (base) {
    labels = base->labels;
  } else {
    std::set<std::string> seen;
    for (const Example& ex : train.rows) seen.insert(ex.label);
    labels.assign(seen.begin(), seen.end());
    if (labels.size() < 2)
      throw Error(train.name + ": every row has the label \"" + labels.front() +
                  "\"; a classifier needs examples of at least two labels (add negative examples)");
  }
  std::string positive = opt.positive.empty() ? (base ? base->positive : guess_positive(labels)) : opt.positive;
  if (!positive.empty() && std::find(labels.begin(), labels.end(), positive) == labels.end())
    throw Error("--positive " + positive + " is not one of the labels");

  Normalization norm{base ? base->tokenizer.normalization().lowercase : opt.lowercase, false};
  std::vector<std::vector<char32_t>> train_texts = normalize_all(train, norm), dev_texts = normalize_all(dev, norm);
  Vocab vocab;
  ModelConfig config = opt.shape;
  if (base) {
    vocab = base->tokenizer.vocab();
    config = base->config;
    config.dropout = opt.shape.dropout;
  } else {
    VocabBuilder builder;
    for (const auto& t : train_texts) builder.add(t);
    vocab = builder.build(opt.min_count);
    config.vocab_size = vocab.size();
    config.labels = static_cast<std::int64_t>(labels.size());
  }
  Classifier model{config, Tokenizer(std::move(vocab), norm), labels, positive, {}, Bert<float>(config)};
  if (base)
    model.net.params() = base->net.params();
  else
    model.net.init_weights(opt.seed);

  SequenceSet tr = encode_all(train, train_texts, model), dv = encode_all(dev, dev_texts, model);
  progress.message((resume ? "resuming training on " : "training on ") + std::to_string(tr.seqs.size()) +
                   " examples (" + format_name(train.format) + "), dev " + std::to_string(dv.seqs.size()) + ", " +
                   std::to_string(opt.threads) + " threads");
  if (tr.truncated)
    progress.message("note: " + std::to_string(tr.truncated) + " training texts are longer than max-len " +
                     std::to_string(config.max_len) + " and were cut for training");

  const std::int64_t per_epoch = (static_cast<std::int64_t>(tr.seqs.size()) + opt.batch - 1) / opt.batch;
  const std::int64_t total = per_epoch * opt.epochs;
  const std::int64_t warmup = static_cast<std::int64_t>(std::llround(opt.warmup * double(total)));
  AdamW<float> adam(opt.adam, model.net.layout());
  ModelCache<float> cache;
  DataParallel<float> runner(opt.threads);
  AlignedVector<float> best_params = model.net.params();
  DevScore best;
  std::int64_t best_epoch = 0, step = 0, start_epoch = 1, start_batch = 0;
  double start_loss = 0;
  nlohmann::json history = nlohmann::json::array();
  std::int64_t examples_seen = 0;
  if (resume) {
    const nlohmann::json& st = resume->state();
    try {
      if (st.at("per_epoch").get<std::int64_t>() != per_epoch)
        throw Error("the training data differ from the checkpoint's (" + std::to_string(per_epoch) +
                    " batches per epoch, the checkpoint has " + std::to_string(st.at("per_epoch").get<std::int64_t>()) +
                    ")");
      step = st.at("step").get<std::int64_t>();
      start_epoch = st.at("epoch").get<std::int64_t>();
      start_batch = st.at("batch").get<std::int64_t>();
      start_loss = st.at("epoch_loss").get<double>();
      best_epoch = st.at("best_epoch").get<std::int64_t>();
      best.loss = st.at("best_loss").get<double>();
      best.accuracy = st.at("best_accuracy").get<double>();
      best.f1 = st.at("best_f1").get<double>();
      history = st.at("history");
      examples_seen = st.at("examples_seen").get<std::int64_t>();
    } catch (const nlohmann::json::exception& e) {
      throw Error(std::string("the checkpoint's training state is damaged (") + e.what() + ")");
    }
    if (start_epoch < 1 || start_epoch > opt.epochs || start_batch < 0 || start_batch > per_epoch || step < 0 ||
        step > total)
      throw Error("the checkpoint's training state is out of range");
    adam.m().assign(resume->adam_m.begin(), resume->adam_m.end());
    adam.v().assign(resume->adam_v.begin(), resume->adam_v.end());
    adam.set_steps(step);
    best_params.assign(resume->best.begin(), resume->best.end());
  }
  auto started = std::chrono::steady_clock::now();
  const std::int64_t examples_at_start = examples_seen;

  // The state that, saved after a step or an epoch, lets --resume continue
  // exactly where this run stopped.
  auto checkpoint = [&](std::int64_t epoch, std::int64_t batch_index, double epoch_loss) {
    Checkpoint c{model, {adam.m().begin(), adam.m().end()}, {adam.v().begin(), adam.v().end()},
                 {best_params.begin(), best_params.end()}};
    c.model.training = {{"checkpoint",
                         {{"options", options_json(opt)},
                          {"init", from_init},
                          {"per_epoch", per_epoch},
                          {"step", step},
                          {"epoch", epoch},
                          {"batch", batch_index},
                          {"epoch_loss", epoch_loss},
                          {"best_epoch", best_epoch},
                          {"best_loss", best.loss},
                          {"best_accuracy", best.accuracy},
                          {"best_f1", best.f1},
                          {"history", history},
                          {"examples_seen", examples_seen},
                          {"run", opt.run}}}};
    save_checkpoint(opt.checkpoint_path, c);
  };

  std::ofstream log;
  if (!opt.log_path.empty()) {
    log.open(opt.log_path, resume ? std::ios::app : std::ios::trunc);
    if (!log) throw Error(opt.log_path + ": cannot open the log for writing");
  }
  double lr = 0;
  for (std::int64_t epoch = start_epoch; epoch <= opt.epochs; ++epoch) {
    std::uint64_t epoch_seed = opt.seed * 1000003ULL + static_cast<std::uint64_t>(epoch);
    double epoch_loss = epoch == start_epoch ? start_loss : 0;
    const auto plan = bucketed_batches(tr.lengths, static_cast<std::size_t>(opt.batch), &epoch_seed);
    for (std::size_t bi = epoch == start_epoch ? static_cast<std::size_t>(start_batch) : 0; bi < plan.size(); ++bi) {
      Batch batch = batch_of(tr, plan[bi]);
      DropoutRng rng{opt.seed, static_cast<std::uint64_t>(step), config.dropout};
      lr = opt.adam.lr * lr_multiplier(step, warmup, total);
      float loss = opt.nan_at_step == step + 1 ? std::numeric_limits<float>::quiet_NaN()
                                               : train_step(model.net, adam, runner, batch, rng, lr);
      if (!std::isfinite(loss)) {
        std::string kept = opt.checkpoint_path.empty() ? ""
                           : epoch > 1 ? "; the last good checkpoint, from the end of epoch " + std::to_string(epoch - 1) +
                                             ", is " + opt.checkpoint_path
                                       : "; no checkpoint yet (the first epoch had not ended)";
        throw Error("training diverged: the loss is not finite at step " + std::to_string(step + 1) +
                    " (try a lower --lr)" + kept);
      }
      ++step;
      examples_seen += batch.size;
      epoch_loss += loss * double(batch.size);
      double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
      progress.update({epoch, opt.epochs, step, total, loss, lr,
                       secs > 0 ? double(examples_seen - examples_at_start) / secs : 0.0});
      if (opt.interrupt_at_step == step) std::raise(opt.interrupt_signal);  // tests: a signal at an exact step
      if (int sig = opt.stop_signal ? opt.stop_signal() : 0) {
        progress.finish();
        if (opt.checkpoint_path.empty()) throw Interrupted(sig, step, "");
        checkpoint(epoch, static_cast<std::int64_t>(bi) + 1, epoch_loss);
        throw Interrupted(sig, step, opt.checkpoint_path);
      }
    }
    DevScore score = evaluate(model, dv, opt.batch, cache);
    bool improved = best_epoch == 0 || score.f1 > best.f1 || (score.f1 == best.f1 && score.loss < best.loss);
    if (improved) {
      best = score;
      best_epoch = epoch;
      best_params = model.net.params();
    }
    double train_loss = epoch_loss / double(tr.seqs.size());
    history.push_back({{"epoch", epoch}, {"step", step}, {"train_loss", train_loss}, {"dev_loss", score.loss},
                       {"dev_accuracy", score.accuracy}, {"dev_macro_f1", score.f1}});
    if (log.is_open()) {  // timings vary between runs, so they go to the log, not into the model
      double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
      nlohmann::json record = history.back();
      record["lr"] = lr;
      record["examples_per_s"] = secs > 0 ? double(examples_seen - examples_at_start) / secs : 0.0;
      log << record.dump() << '\n' << std::flush;
      if (!log) throw Error(opt.log_path + ": write failed");
    }
    progress.message("epoch " + std::to_string(epoch) + "/" + std::to_string(opt.epochs) +
                     fmt("  train loss %.4f  dev loss %.4f  dev acc %.4f", train_loss, score.loss, score.accuracy) +
                     fmt("  dev macro-F1 %.4f", score.f1, 0, 0) + (improved ? "  (best)" : ""));
    // Each finished epoch is a point to resume from, also after a crash.
    if (!opt.checkpoint_path.empty() && epoch < opt.epochs) checkpoint(epoch + 1, 0, 0.0);
  }
  progress.finish();
  model.net.params() = best_params;
  // File names without directories: the same data trained elsewhere gives the same bytes.
  auto base_name = [](const std::string& path) { return path.substr(path.find_last_of('/') + 1); };
  model.training = {{"data", base_name(train.name)},
                    {"train_examples", tr.seqs.size()},
                    {"dev", base_name(dev.name)},
                    {"dev_examples", dv.seqs.size()},
                    {"epochs", opt.epochs},
                    {"steps", total},
                    {"best_epoch", best_epoch},
                    {"dev_loss", best.loss},
                    {"dev_accuracy", best.accuracy},
                    {"dev_macro_f1", best.f1},
                    {"batch", opt.batch},
                    {"lr", opt.adam.lr},
                    {"warmup", opt.warmup},
                    {"weight_decay", opt.adam.weight_decay},
                    {"clip_norm", opt.adam.clip_norm},
                    {"dropout", config.dropout},
                    {"seed", opt.seed},
                    {"min_count", opt.min_count},
                    {"threads", opt.threads},
                    {"init", from_init},
                    {"history", history},
                    {"zibert_version", ZIBERT_VERSION}};
  return model;
}

}  // namespace zibert
