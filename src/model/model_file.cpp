#include "zibert/model/model_file.hpp"

#include <algorithm>
#include <cmath>
#include <optional>

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

// What the metadata says, checked, before any tensor is looked at.
struct Header {
  ModelConfig config;
  Vocab vocab;
  std::vector<std::string> labels;
  std::string positive;
  Normalization norm;
  nlohmann::json training;
  std::optional<Windows> windows;
};

class Reader {
 public:
  Reader(const SafeTensors& file, const std::string& name) : file_(file), name_(name) {}

  Error bad(const std::string& what) const { return Error(name_ + ": not a usable zibert model: " + what); }

  const std::string& meta(const std::string& key) const {
    auto it = file_.metadata.find(key);
    if (it == file_.metadata.end()) throw bad("metadata has no \"" + key + "\"");
    return it->second;
  }

  nlohmann::json parse(const std::string& key) const {
    if (json_nesting_depth(meta(key)) > kMaxJsonDepth)
      throw bad("metadata \"" + key + "\" is JSON nested more than " + std::to_string(kMaxJsonDepth) + " deep");
    try {
      return nlohmann::json::parse(meta(key));
    } catch (const nlohmann::json::exception& e) {
      throw bad("metadata \"" + key + "\" is not JSON (" + e.what() + ")");
    }
  }

  Header header() const {
    if (meta("format") != kFormatName) throw bad("format is \"" + meta("format") + "\", not \"zibert\"");
    if (meta("format_version") != std::to_string(kFormatVersion))
      throw bad("format version " + meta("format_version") + " is not supported (this zibert reads " +
                std::to_string(kFormatVersion) + ")");
    Header h;
    std::vector<std::string> vocab_tokens;
    try {
      h.config = config_from_json(parse("config"));
      vocab_tokens = parse("vocab").get<std::vector<std::string>>();
      h.labels = parse("labels").get<std::vector<std::string>>();
      h.norm.lowercase = parse("normalization").at("lowercase").get<bool>();
      h.training = parse("training");
    } catch (const nlohmann::json::exception& e) {
      throw bad(std::string("metadata has a wrong field (") + e.what() + ")");
    } catch (const Error& e) {
      throw bad(std::string("metadata \"config\": ") + e.what());
    }
    try {
      h.config.validate();
    } catch (const Error& e) {
      throw bad(e.what());
    }
    if (static_cast<std::int64_t>(vocab_tokens.size()) != h.config.vocab_size)
      throw bad("vocab has " + std::to_string(vocab_tokens.size()) + " entries but config.vocab_size is " +
                std::to_string(h.config.vocab_size));
    if (static_cast<std::int64_t>(h.labels.size()) != h.config.labels)
      throw bad("labels has " + std::to_string(h.labels.size()) + " entries but config.labels is " +
                std::to_string(h.config.labels));
    try {
      h.vocab = Vocab::from_tokens(vocab_tokens);
    } catch (const Error& e) {
      throw bad(e.what());
    }
    h.positive = meta("positive_label");
    if (!h.positive.empty() && std::find(h.labels.begin(), h.labels.end(), h.positive) == h.labels.end())
      throw bad("positive label \"" + h.positive + "\" is not one of the labels");
    if (auto it = file_.metadata.find("windows"); it != file_.metadata.end()) {
      try {
        h.windows = windows_from_name(it->second);
      } catch (const Error& e) {
        throw bad(std::string("metadata \"windows\": ") + e.what());
      }
    }
    return h;
  }

  // Every tensor the config needs must be in the file with its shape before
  // anything is allocated: a small file cannot make zibert allocate a big model.
  void check_shapes(const std::vector<TensorInfo>& layout) const {
    for (const TensorInfo& t : layout) {
      auto it = file_.tensors.find(t.name);
      if (it == file_.tensors.end()) throw bad("tensor " + t.name + " is missing");
      if (it->second.shape != t.shape) {
        std::string got, want;
        for (auto d : it->second.shape) got += (got.empty() ? "" : ",") + std::to_string(d);
        for (auto d : t.shape) want += (want.empty() ? "" : ",") + std::to_string(d);
        throw bad("tensor " + t.name + " has shape [" + got + "], the config needs [" + want + "]");
      }
    }
  }

  // The weights, each finite; a tensor the model does not have is an error,
  // unless extra takes the checkpoint's own (zibert.*).
  void copy_weights(Bert<float>& net, std::map<std::string, SafeTensor>* extra) const {
    for (const TensorInfo& t : net.layout()) {
      float* dst = net.params().data() + t.offset;
      file_.tensors.at(t.name).copy_to(dst);
      for (std::size_t i = 0; i < t.size; ++i)
        if (!std::isfinite(dst[i])) throw bad("tensor " + t.name + " holds a NaN or infinite weight");
    }
    if (net.layout().size() == file_.tensors.size()) return;
    for (const auto& [tname, tensor] : file_.tensors) {
      bool known = false;
      for (const TensorInfo& t : net.layout()) known = known || t.name == tname;
      if (known) continue;
      if (extra && tname.rfind("zibert.", 0) == 0)
        extra->emplace(tname, tensor);
      else
        throw bad("unexpected tensor " + tname);
    }
  }

 private:
  const SafeTensors& file_;
  const std::string& name_;
};

Classifier decode_with(std::string_view bytes, const std::string& name, std::map<std::string, SafeTensor>* extra) {
  const SafeTensors file = decode_safetensors(bytes, name);
  const Reader reader(file, name);
  Header h = reader.header();
  reader.check_shapes(parameter_layout(h.config));
  // A loaded model only predicts (training copies it into a fresh network), so
  // it needs no gradient buffer: less memory to allocate and fault in at start-up.
  Classifier model{h.config,  Tokenizer(std::move(h.vocab), h.norm),           h.labels, h.positive,
                   h.training, Bert<float>(h.config, /*trainable=*/false), h.windows};
  try {
    model.check_windows();
  } catch (const Error& e) {
    throw reader.bad(std::string("metadata \"windows\": ") + e.what());
  }
  reader.copy_weights(model.net, extra);
  return model;
}

}  // namespace

}  // namespace zibert
