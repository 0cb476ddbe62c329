#include "zibert/model/model_file.hpp"

#include <cmath>

#include "zibert/base/io.hpp"
#include "zibert/model/safetensors.hpp"

namespace zibert {

namespace {
constexpr const char* kCheckpointTensors[] = {"zibert.adam.m", "zibert.adam.v", "zibert.best"};

std::string encode_with(const Classifier& model, const std::vector<TensorRef>& extra) {
  std::map<std::string, std::string> meta;
  meta["format"] = kFormatName;
  meta["format_version"] = std::to_string(kFormatVersion);
  meta["config"] = config_to_json(model.config).dump();
  meta["vocab"] = nlohmann::json(model.tokenizer.vocab().tokens()).dump();
  meta["labels"] = nlohmann::json(model.labels).dump();
  meta["positive_label"] = model.positive;
  meta["normalization"] = nlohmann::json{{"form", "NFKC"}, {"lowercase", model.tokenizer.normalization().lowercase}}.dump();
  meta["training"] = model.training.is_null() ? "{}" : model.training.dump();
  if (model.windows) meta["windows"] = windows_name(*model.windows);
  std::vector<TensorRef> tensors;
  for (const TensorInfo& t : model.net.layout())
    tensors.push_back({t.name, t.shape, model.net.params().data() + t.offset});
  tensors.insert(tensors.end(), extra.begin(), extra.end());
  return encode_safetensors(meta, tensors);
}

Classifier decode_with(std::string_view bytes, const std::string& name, std::map<std::string, SafeTensor>* extra);

}  // namespace

std::string encode_model(const Classifier& model) { return encode_with(model, {}); }

std::string encode_checkpoint(const Checkpoint& c) {
  const auto n = static_cast<std::int64_t>(c.model.net.params().size());
  for (const auto* v : {&c.adam_m, &c.adam_v, &c.best})
    if (static_cast<std::int64_t>(v->size()) != n) throw Error("checkpoint state does not match the model's size");
  return encode_with(c.model, {{kCheckpointTensors[0], {n}, c.adam_m.data()},
                               {kCheckpointTensors[1], {n}, c.adam_v.data()},
                               {kCheckpointTensors[2], {n}, c.best.data()}});
}

void save_checkpoint(const std::string& path, const Checkpoint& c) { write_file_atomic(path, encode_checkpoint(c)); }

Checkpoint load_checkpoint(const std::string& path) {
  MappedFile file(path);
  std::map<std::string, SafeTensor> extra;
  Checkpoint c{decode_with(file.bytes(), path, &extra), {}, {}, {}};
  auto bad = [&](const std::string& what) { return Error(path + ": not a usable zibert checkpoint: " + what); };
  if (!c.model.training.is_object() || !c.model.training.contains("checkpoint") ||
      !c.model.training["checkpoint"].is_object())
    throw bad("it holds no training state (a model file? train --init starts from a model)");
  std::vector<float>* into[] = {&c.adam_m, &c.adam_v, &c.best};
  for (int i = 0; i < 3; ++i) {
    auto it = extra.find(kCheckpointTensors[i]);
    if (it == extra.end()) throw bad(std::string("tensor ") + kCheckpointTensors[i] + " is missing");
    if (it->second.count != c.model.net.params().size())
      throw bad(std::string("tensor ") + kCheckpointTensors[i] + " does not match the model's size");
    into[i]->resize(it->second.count);
    it->second.copy_to(into[i]->data());
    for (float v : *into[i])
      if (!std::isfinite(v)) throw bad(std::string("tensor ") + kCheckpointTensors[i] + " holds a NaN or infinity");
  }
  return c;
}

void save_model(const std::string& path, const Classifier& model) { write_file_atomic(path, encode_model(model)); }

Classifier load_model(const std::string& path) {
  MappedFile file(path);
  return decode_model(file.bytes(), path);
}

Classifier decode_model(std::string_view bytes, const std::string& name) { return decode_with(bytes, name, nullptr); }

namespace {

Classifier decode_with(std::string_view bytes, const std::string& name, std::map<std::string, SafeTensor>* extra) {
  SafeTensors file = decode_safetensors(bytes, name);
  auto bad = [&](const std::string& what) { return Error(name + ": not a usable zibert model: " + what); };
  auto meta = [&](const std::string& key) -> const std::string& {
    auto it = file.metadata.find(key);
    if (it == file.metadata.end()) throw bad("metadata has no \"" + key + "\"");
    return it->second;
  };
  auto parse = [&](const std::string& key) {
    if (json_nesting_depth(meta(key)) > kMaxJsonDepth)
      throw bad("metadata \"" + key + "\" is JSON nested more than " + std::to_string(kMaxJsonDepth) + " deep");
    try {
      return nlohmann::json::parse(meta(key));
    } catch (const nlohmann::json::exception& e) {
      throw bad("metadata \"" + key + "\" is not JSON (" + e.what() + ")");
    }
  };
  if (meta("format") != kFormatName) throw bad("format is \"" + meta("format") + "\", not \"zibert\"");
  if (meta("format_version") != std::to_string(kFormatVersion))
    throw bad("format version " + meta("format_version") + " is not supported (this zibert reads " +
              std::to_string(kFormatVersion) + ")");
  ModelConfig config;
  std::vector<std::string> vocab_tokens, labels;
  Normalization norm;
  nlohmann::json training;
  try {
    config = config_from_json(parse("config"));
    vocab_tokens = parse("vocab").get<std::vector<std::string>>();
    labels = parse("labels").get<std::vector<std::string>>();
    norm.lowercase = parse("normalization").at("lowercase").get<bool>();
    training = parse("training");
  } catch (const nlohmann::json::exception& e) {
    throw bad(std::string("metadata has a wrong field (") + e.what() + ")");
  }
  try {
    config.validate();
  } catch (const Error& e) {
    throw bad(e.what());
  }
  if (static_cast<std::int64_t>(vocab_tokens.size()) != config.vocab_size)
    throw bad("vocab has " + std::to_string(vocab_tokens.size()) + " entries but config.vocab_size is " +
              std::to_string(config.vocab_size));
  if (static_cast<std::int64_t>(labels.size()) != config.labels)
    throw bad("labels has " + std::to_string(labels.size()) + " entries but config.labels is " +
              std::to_string(config.labels));
  Vocab vocab;
  try {
    vocab = Vocab::from_tokens(vocab_tokens);
  } catch (const Error& e) {
    throw bad(e.what());
  }

  // Every tensor the config needs must be in the file with its shape before
  // anything is allocated: a small file cannot make zibert allocate a big model.
  const std::vector<TensorInfo> layout = parameter_layout(config);
  for (const TensorInfo& t : layout) {
    auto it = file.tensors.find(t.name);
    if (it == file.tensors.end()) throw bad("tensor " + t.name + " is missing");
    if (it->second.shape != t.shape) {
      std::string got, want;
      for (auto d : it->second.shape) got += (got.empty() ? "" : ",") + std::to_string(d);
      for (auto d : t.shape) want += (want.empty() ? "" : ",") + std::to_string(d);
      throw bad("tensor " + t.name + " has shape [" + got + "], the config needs [" + want + "]");
    }
  }
  // A loaded model only predicts (training copies it into a fresh network), so
  // it needs no gradient buffer: less memory to allocate and fault in at start-up.
  Classifier model{config, Tokenizer(std::move(vocab), norm), labels, meta("positive_label"), training,
                   Bert<float>(config, /*trainable=*/false)};
  if (!model.positive.empty() && model.label_id(model.positive) < 0)
    throw bad("positive label \"" + model.positive + "\" is not one of the labels");
  if (auto it = file.metadata.find("windows"); it != file.metadata.end()) {
    try {
      model.windows = windows_from_name(it->second);
    } catch (const Error& e) {
      throw bad(std::string("metadata \"windows\": ") + e.what());
    }
    if (*model.windows == Windows::max && model.positive_id() < 0)
      throw bad("metadata \"windows\" is max, which needs a binary model with a positive label");
  }
  std::size_t used = 0;
  for (const TensorInfo& t : model.net.layout()) {
    auto it = file.tensors.find(t.name);
    float* dst = model.net.params().data() + t.offset;
    it->second.copy_to(dst);
    for (std::size_t i = 0; i < t.size; ++i)
      if (!std::isfinite(dst[i])) throw bad("tensor " + t.name + " holds a NaN or infinite weight");
    ++used;
  }
  if (used != file.tensors.size()) {
    for (const auto& [tname, _] : file.tensors) {
      bool known = false;
      for (const TensorInfo& t : model.net.layout()) known = known || t.name == tname;
      if (known) continue;
      if (extra && tname.rfind("zibert.", 0) == 0)
        extra->emplace(tname, file.tensors.at(tname));
      else
        throw bad("unexpected tensor " + tname);
    }
  }
  return model;
}

}  // namespace

}  // namespace zibert
