#include "zibert/train/checkpoint.hpp"

#include "zibert/base/world.hpp"

#include "zibert/base/error.hpp"

namespace zibert {

int world_threads(const TrainOptions& opt) { return opt.threads * World::get().size(); }

std::int64_t step_batch(const TrainOptions& opt) { return opt.batch * opt.accumulate; }

nlohmann::json options_json(const TrainOptions& o) {
  return {{"epochs", o.epochs},         {"batch", o.batch},
          {"lr", o.adam.lr},            {"beta1", o.adam.beta1},
          {"beta2", o.adam.beta2},      {"eps", o.adam.eps},
          {"weight_decay", o.adam.weight_decay}, {"clip_norm", o.adam.clip_norm},
          {"warmup", o.warmup},         {"seed", o.seed},
          {"min_count", o.min_count},   {"max_vocab", o.max_vocab},   {"lowercase", o.lowercase},
          {"extend_vocab", o.extend_vocab}, {"label_smoothing", o.label_smoothing},
          {"positive", o.positive},     {"windows", o.windows},
          {"threads", o.threads},       {"shape", config_to_json(o.shape)},
          {"accumulate", o.accumulate}, {"reading_channel", o.reading_channel},
          {"readings_table", o.readings_table}, {"sound_only", o.sound_only}};
}

TrainOptions options_from_json(const nlohmann::json& j) {
  TrainOptions o;
  o.epochs = j.at("epochs").get<std::int64_t>();
  o.batch = j.at("batch").get<std::int64_t>();
  o.accumulate = j.value("accumulate", std::int64_t(1));
  o.adam.lr = j.at("lr").get<double>();
  o.adam.beta1 = j.at("beta1").get<double>();
  o.adam.beta2 = j.at("beta2").get<double>();
  o.adam.eps = j.at("eps").get<double>();
  o.adam.weight_decay = j.at("weight_decay").get<double>();
  o.adam.clip_norm = j.at("clip_norm").get<double>();
  o.warmup = j.at("warmup").get<double>();
  o.seed = j.at("seed").get<std::uint64_t>();
  o.min_count = j.at("min_count").get<std::int64_t>();
  o.max_vocab = j.value("max_vocab", std::int64_t(0));
  o.lowercase = j.at("lowercase").get<bool>();
  o.extend_vocab = j.value("extend_vocab", false);
  o.reading_channel = j.value("reading_channel", false);
  o.readings_table = j.value("readings_table", "");
  o.sound_only = j.value("sound_only", 0.0);
  o.label_smoothing = j.value("label_smoothing", 0.0);
  o.positive = j.at("positive").get<std::string>();
  o.windows = j.value("windows", "");  // checkpoints written before train --windows: the default
  o.threads = j.at("threads").get<int>();
  if (j.contains("shape")) {
    o.shape = config_from_json(j.at("shape"));
  } else {  // checkpoints written before the shape was nested (older zibert versions)
    o.shape.dropout = j.at("dropout").get<double>();
    o.shape.layers = j.at("layers").get<std::int64_t>();
    o.shape.heads = j.at("heads").get<std::int64_t>();
    o.shape.dim = j.at("dim").get<std::int64_t>();
    o.shape.ffn = j.at("ffn").get<std::int64_t>();
    o.shape.max_len = j.at("max_len").get<std::int64_t>();
    o.shape.tie_qk = j.at("tie_qk").get<bool>();
    o.shape.position = j.at("position").get<bool>();
  }
  return o;
}

nlohmann::json TrainState::to_json(const TrainOptions& options) const {
  return {{"options", options_json(options)},
          {"init", init},
          {"per_epoch", per_epoch},
          {"step", step},
          {"epoch", epoch},
          {"batch", batch},
          {"epoch_loss", epoch_loss},
          {"best_epoch", best_epoch},
          {"best_loss", best.loss},
          {"best_accuracy", best.accuracy},
          {"best_f1", best.f1},
          {"history", history},
          {"examples_seen", examples_seen},
          {"pretraining", pretraining},
          {"run", options.run}};
}

TrainState TrainState::from_json(const nlohmann::json& j) {
  TrainState s;
  try {
    s.init = j.value("init", false);
    s.per_epoch = j.at("per_epoch").get<std::int64_t>();
    s.step = j.at("step").get<std::int64_t>();
    s.epoch = j.at("epoch").get<std::int64_t>();
    s.batch = j.at("batch").get<std::int64_t>();
    s.epoch_loss = j.at("epoch_loss").get<double>();
    s.best_epoch = j.at("best_epoch").get<std::int64_t>();
    s.best.loss = j.at("best_loss").get<double>();
    s.best.accuracy = j.at("best_accuracy").get<double>();
    s.best.f1 = j.at("best_f1").get<double>();
    s.history = j.at("history");
    s.examples_seen = j.at("examples_seen").get<std::int64_t>();
    if (j.contains("pretraining")) s.pretraining = j.at("pretraining");
  } catch (const nlohmann::json::exception& e) {
    throw Error(std::string("the checkpoint's training state is damaged (") + e.what() + ")");
  }
  return s;
}

}  // namespace zibert
