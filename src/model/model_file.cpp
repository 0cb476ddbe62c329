#include "zibert/model/model_file.hpp"

#include <algorithm>
#include <cmath>
#include <optional>
#include <set>

#include "zibert/base/half.hpp"
#include "zibert/base/io.hpp"
#include "zibert/model/safetensors.hpp"
#include "zibert/model/variant_table.hpp"
#include "zibert/nn/qgemm.hpp"

namespace zibert {

namespace {
constexpr const char* kCheckpointTensors[] = {"zibert.adam.m", "zibert.adam.v", "zibert.best"};
// Metadata "dtype" of a model stored in float16 (Hugging Face's torch_dtype
// name); a float32 model has none, so its files stay as they were.
constexpr const char* kFloat16 = "float16";

// A float16 model's weights as stored: (params) halves, each exactly the
// float the network holds.
std::vector<std::uint16_t> halves_of(const Model& model) {
  std::vector<std::uint16_t> out(model.net.params().size());
  for (std::size_t i = 0; i < out.size(); ++i) {
    const float w = model.net.params()[i];
    out[i] = half_from_float(w);
    if (!(float_from_half(out[i]) == w)) throw Error("a float16 model holds a weight float16 cannot store exactly");
  }
  return out;
}

// The model file's metadata and tensors, with extra tensors after the
// network's, handed to emit(meta, tensors) (which encodes or writes them).
// training: the metadata's "training" record, when not the model's own.
template <class Emit>
auto emit_with(const Model& model, const std::vector<TensorRef>& extra, const nlohmann::json* training, Emit emit) {
  std::map<std::string, std::string> meta;
  meta["format"] = kFormatName;
  meta["format_version"] = std::to_string(kFormatVersion);
  meta["config"] = config_to_json(model.config).dump();
  if (const WordPiece* wp = model.tokenizer.wordpiece()) {
    meta["vocab"] = nlohmann::json(wp->tokens()).dump();
    meta["tokenizer"] = wordpiece_to_json(wp->options()).dump();
  } else {
    meta["vocab"] = nlohmann::json(model.tokenizer.vocab().tokens()).dump();
    meta["normalization"] =
        nlohmann::json{{"form", "NFKC"}, {"lowercase", model.tokenizer.normalization().lowercase}}.dump();
  }
  if (!model.tokenizer.vocab().variants().empty())
    meta["variants"] = variant_table_to_json(model.tokenizer.vocab().variants());
  meta["labels"] = nlohmann::json(model.classifier.labels).dump();
  meta["positive_label"] = model.classifier.positive;
  const nlohmann::json& record = training ? *training : model.training;
  meta["training"] = record.is_null() ? "{}" : record.dump();
  if (model.classifier.windows) meta["windows"] = windows_name(*model.classifier.windows);
  if (model.quantization) meta["quantization"] = quantization_metadata(*model.quantization).dump();
  if (model.classifier.calibration) meta["calibration"] = model.classifier.calibration->to_json().dump();
  if (model.float16) meta["dtype"] = kFloat16;
  const std::vector<std::uint16_t> halves = model.float16 ? halves_of(model) : std::vector<std::uint16_t>{};
  std::vector<TensorRef> tensors;
  for (const TensorInfo& t : model.net.layout()) {
    const QuantizedTensor* q = nullptr;
    if (model.quantization)
      if (auto it = model.quantization->tensors.find(t.name); it != model.quantization->tensors.end()) q = &it->second;
    if (model.float16) {
      tensors.push_back({t.name, t.shape, halves.data() + t.offset, DType::f16});
      continue;
    }
    if (!q) {
      tensors.push_back({t.name, t.shape, model.net.params().data() + t.offset});
      continue;
    }
    tensors.push_back({t.name, t.shape, q->values.data(), DType::i8});
    tensors.push_back({t.name + kScaleSuffix, {q->rows}, q->scales.data()});
  }
  tensors.insert(tensors.end(), extra.begin(), extra.end());
  return emit(meta, tensors);
}

std::string encode_with(const Model& model, const std::vector<TensorRef>& extra, const nlohmann::json* training) {
  return emit_with(model, extra, training, encode_safetensors);
}

void save_with(const std::string& path, const Model& model, const std::vector<TensorRef>& extra,
               const nlohmann::json* training) {
  emit_with(model, extra, training, [&](const std::map<std::string, std::string>& meta,
                                        const std::vector<TensorRef>& tensors) { save_safetensors(path, meta, tensors); });
}

// The checkpoint's tensors after the model's: AdamW's moments and the best weights.
std::vector<TensorRef> checkpoint_tensors(const Model& model, std::span<const float> adam_m,
                                          std::span<const float> adam_v, std::span<const float> best) {
  if (model.float16) throw Error("a checkpoint holds float32 weights, not a float16 model's");
  const auto n = static_cast<std::int64_t>(model.net.params().size());
  for (const auto& v : {adam_m, adam_v, best})
    if (static_cast<std::int64_t>(v.size()) != n) throw Error("checkpoint state does not match the model's size");
  return {{kCheckpointTensors[0], {n}, adam_m.data()},
          {kCheckpointTensors[1], {n}, adam_v.data()},
          {kCheckpointTensors[2], {n}, best.data()}};
}

Model decode_with(std::string_view bytes, const std::string& name, std::map<std::string, SafeTensor>* extra);

}  // namespace

std::string encode_model(const Model& model) { return encode_with(model, {}, nullptr); }

std::string encode_checkpoint(const Checkpoint& c) {
  return encode_with(c.model, checkpoint_tensors(c.model, c.adam_m, c.adam_v, c.best), nullptr);
}

void save_checkpoint(const std::string& path, const Model& model, const nlohmann::json& training,
                     std::span<const float> adam_m, std::span<const float> adam_v, std::span<const float> best) {
  save_with(path, model, checkpoint_tensors(model, adam_m, adam_v, best), &training);
}

Checkpoint load_checkpoint(const std::string& path) {
  MappedFile file(path);
  std::map<std::string, SafeTensor> extra;
  Checkpoint c{decode_with(file.bytes(), path, &extra), {}, {}, {}};
  auto bad = [&](const std::string& what) { return Error(path + ": not a usable zibert checkpoint: " + what); };
  if (c.model.quantization) throw bad("it is an int8 model (zibert quantize's), which does not train");
  if (c.model.float16) throw bad("its weights are float16 (zibert quantize --to float16's); training keeps float32");
  if (!c.model.training.is_object() || !c.model.training.contains("checkpoint") ||
      !c.model.training["checkpoint"].is_object())
    throw bad("it holds no training state (a model file? train --init starts from a model)");
  std::vector<float>* into[] = {&c.adam_m, &c.adam_v, &c.best};
  for (int i = 0; i < 3; ++i) {
    auto it = extra.find(kCheckpointTensors[i]);
    if (it == extra.end()) throw bad(std::string("tensor ") + kCheckpointTensors[i] + " is missing");
    if (it->second.dtype != DType::f32) throw bad(std::string("tensor ") + kCheckpointTensors[i] + " is not F32");
    if (it->second.count != c.model.net.params().size())
      throw bad(std::string("tensor ") + kCheckpointTensors[i] + " does not match the model's size");
    into[i]->resize(it->second.count);
    it->second.copy_to(into[i]->data());
    for (float v : *into[i])
      if (!std::isfinite(v)) throw bad(std::string("tensor ") + kCheckpointTensors[i] + " holds a NaN or infinity");
  }
  return c;
}

void save_model(const std::string& path, const Model& model) { save_with(path, model, {}, nullptr); }

Model load_model(const std::string& path) {
  MappedFile file(path);
  return decode_model(file.bytes(), path);
}

Model decode_model(std::string_view bytes, const std::string& name) { return decode_with(bytes, name, nullptr); }

namespace {

// What the metadata says, checked, before any tensor is looked at.
struct Header {
  ModelConfig config;
  Vocab vocab;
  std::optional<WordPiece> wordpiece;  // metadata "tokenizer" kind "wordpiece": the vocabulary is its
  ClassifierPart classifier;  // labels, positive, windows, calibration
  Normalization norm;
  nlohmann::json training;
  std::optional<std::vector<std::string>> quantized;  // the int8 tensors the metadata names
  bool float16 = false;  // metadata "dtype": "float16": every weight F16
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
    std::optional<WordPieceOptions> wordpiece;
    try {
      h.config = config_from_json(parse("config"));
      vocab_tokens = parse("vocab").get<std::vector<std::string>>();
      h.classifier.labels = parse("labels").get<std::vector<std::string>>();
      if (file_.metadata.count("tokenizer"))
        wordpiece = wordpiece_from_json(parse("tokenizer"));
      else
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
    if (static_cast<std::int64_t>(h.classifier.labels.size()) != h.config.labels)
      throw bad("labels has " + std::to_string(h.classifier.labels.size()) + " entries but config.labels is " +
                std::to_string(h.config.labels));
    try {
      if (wordpiece)
        h.wordpiece = WordPiece(std::move(vocab_tokens), *wordpiece);
      else
        h.vocab = Vocab::from_tokens(vocab_tokens);
    } catch (const Error& e) {
      throw bad(e.what());
    }
    if (file_.metadata.count("variants")) {
      try {  // Vocab::set_variants checks the pairs against the vocabulary
        h.vocab.set_variants(variant_table_from_json(meta("variants")));
      } catch (const Error& e) {
        throw bad(std::string("metadata \"variants\": ") + e.what());
      }
    }
    h.classifier.positive = meta("positive_label");
    if (!h.classifier.positive.empty() && std::find(h.classifier.labels.begin(), h.classifier.labels.end(), h.classifier.positive) == h.classifier.labels.end())
      throw bad("positive label \"" + h.classifier.positive + "\" is not one of the labels");
    if (!h.classifier.positive.empty() && h.config.multi_label) throw bad("a multi-label model has no positive label");
    if (auto it = file_.metadata.find("windows"); it != file_.metadata.end()) {
      try {
        h.classifier.windows = windows_from_name(it->second);
      } catch (const Error& e) {
        throw bad(std::string("metadata \"windows\": ") + e.what());
      }
    }
    if (file_.metadata.count("quantization")) h.quantized = quantized_names(parse("quantization"));
    if (auto it = file_.metadata.find("dtype"); it != file_.metadata.end()) {
      if (it->second != kFloat16)
        throw bad("metadata \"dtype\" is \"" + it->second + "\"; zibert stores float32 (no \"dtype\") or \"float16\"");
      if (h.quantized)
        throw bad("metadata has both \"dtype\": \"float16\" and \"quantization\"; an int8 model keeps its other "
                  "tensors float32");
      h.float16 = true;
    }
    if (file_.metadata.count("calibration")) {
      if (h.config.multi_label) throw bad("metadata \"calibration\": a temperature calibrates a softmax, and this "
                                          "model is multi-label");
      const nlohmann::json calibration = parse("calibration");
      try {
        h.classifier.calibration = Calibration::from_json(calibration);
      } catch (const nlohmann::json::exception& e) {  // a field of the wrong type
        throw bad(std::string("metadata \"calibration\": ") + e.what());
      } catch (const Error& e) {
        throw bad(std::string("metadata \"calibration\": ") + e.what());
      }
    }
    return h;
  }

  // The names in metadata "quantization", which must say zibert's scheme.
  std::vector<std::string> quantized_names(const nlohmann::json& q) const {
    const std::string what = "metadata \"quantization\"";
    if (!q.is_object() || !q.contains("scheme") || !q["scheme"].is_string())
      throw bad(what + " has no scheme");
    if (q["scheme"] != kQuantizationScheme)
      throw bad(what + " has scheme " + q["scheme"].dump() + "; this zibert reads " + kQuantizationScheme);
    if (!q.contains("tensors") || !q["tensors"].is_array()) throw bad(what + " has no list of tensors");
    std::vector<std::string> names;
    for (const auto& n : q["tensors"]) {
      if (!n.is_string()) throw bad(what + " lists a tensor that is not a name");
      names.push_back(n.get<std::string>());
    }
    return names;
  }

  // Every tensor the config needs must be in the file with its shape and
  // dtype before anything is allocated: a small file cannot make zibert
  // allocate a big model. In a quantized model the matrices are I8, each
  // with its F32 scales, exactly as the metadata lists them; in a float16
  // one every tensor is F16.
  void check_shapes(const std::vector<TensorInfo>& layout, const Header& h) const {
    std::vector<std::string> matrices;
    for (const TensorInfo& t : layout) {
      const bool int8 = h.quantized && is_quantized_tensor(t);
      if (int8) matrices.push_back(t.name);
      check_tensor(t.name, t.shape, int8 ? DType::i8 : h.float16 ? DType::f16 : DType::f32, h);
      if (int8) check_tensor(t.name + kScaleSuffix, {t.shape[0]}, DType::f32, h);
    }
    if (!h.quantized) return;
    if (std::max(h.config.dim, h.config.ffn) > kInt8MaxDepth)
      throw bad("an int8 model of dim " + std::to_string(h.config.dim) + " and ffn " + std::to_string(h.config.ffn) +
                " is too wide for int32 sums (at most " + std::to_string(kInt8MaxDepth) + ")");
    std::vector<std::string> listed = *h.quantized;
    std::sort(listed.begin(), listed.end());
    std::sort(matrices.begin(), matrices.end());
    if (listed != matrices)
      throw bad("metadata \"quantization\" lists " + std::to_string(listed.size()) +
                " tensors, not the model's " + std::to_string(matrices.size()) + " matrices");
  }

  void check_tensor(const std::string& name, const std::vector<std::int64_t>& shape, DType dtype,
                    const Header& h) const {
    auto it = file_.tensors.find(name);
    if (it == file_.tensors.end()) throw bad("tensor " + name + " is missing");
    if (it->second.shape != shape) {
      std::string got, want;
      for (auto d : it->second.shape) got += (got.empty() ? "" : ",") + std::to_string(d);
      for (auto d : shape) want += (want.empty() ? "" : ",") + std::to_string(d);
      throw bad("tensor " + name + " has shape [" + got + "], the config needs [" + want + "]");
    }
    const DType got = it->second.dtype;
    if (got != dtype)
      throw bad("tensor " + name + " is " + dtype_name(got) + " where the model needs " + dtype_name(dtype) +
                (got == DType::i8 && !h.quantized ? " (an int8 tensor in a model whose metadata has no \"quantization\")"
                 : got == DType::f16 && !h.float16
                     ? " (a float16 tensor in a model whose metadata has no \"dtype\": \"float16\")"
                     : ""));
  }

  // The weights, each finite; a tensor the model does not have is an error,
  // unless extra takes the checkpoint's own (zibert.*).
  // A quantized model's int8 tensors and their scales (each finite and
  // positive) go into q, their dequantized values into net.
  void copy_weights(Bert<float>& net, std::map<std::string, SafeTensor>* extra,
                    std::optional<Quantization>& q) const {
    std::set<std::string> known;
    for (const TensorInfo& t : net.layout()) {
      known.insert(t.name);
      const SafeTensor& src = file_.tensors.at(t.name);
      if (src.dtype == DType::i8) {
        const std::string scale_name = t.name + kScaleSuffix;
        known.insert(scale_name);
        QuantizedTensor qt{t.shape[0], t.shape[1], std::vector<std::int8_t>(t.size),
                           std::vector<float>(static_cast<std::size_t>(t.shape[0]))};
        src.copy_to(qt.values.data());
        file_.tensors.at(scale_name).copy_to(qt.scales.data());
        for (float s : qt.scales)
          if (!(std::isfinite(s) && s > 0))
            throw bad("tensor " + scale_name + " holds a scale that is not finite and positive (" +
                      std::to_string(s) + ")");
        if (!q) q.emplace();
        q->tensors.emplace(t.name, std::move(qt));
        continue;
      }
      float* dst = net.params().data() + t.offset;
      src.copy_to(dst);
      for (std::size_t i = 0; i < t.size; ++i)
        if (!std::isfinite(dst[i])) throw bad("tensor " + t.name + " holds a NaN or infinite weight");
    }
    if (q) dequantize_into(*q, net);
    if (known.size() == file_.tensors.size()) return;
    for (const auto& [tname, tensor] : file_.tensors) {
      if (known.count(tname)) continue;
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

Model decode_with(std::string_view bytes, const std::string& name, std::map<std::string, SafeTensor>* extra) {
  const SafeTensors file = decode_safetensors(bytes, name);
  const Reader reader(file, name);
  Header h = reader.header();
  reader.check_shapes(parameter_layout(h.config), h);
  // A loaded model only predicts (training copies it into a fresh network), so
  // it needs no gradient buffer: less memory to allocate and fault in at start-up.
  Model model{h.config, h.wordpiece ? Tokenizer(std::move(*h.wordpiece)) : Tokenizer(std::move(h.vocab), h.norm),
              std::move(h.classifier), h.training,
              Bert<float>(h.config, /*trainable=*/false), std::nullopt};
  try {
    model.classifier.check_windows(model.config.multi_label);
  } catch (const Error& e) {
    throw reader.bad(std::string("metadata \"windows\": ") + e.what());
  }
  reader.copy_weights(model.net, extra, model.quantization);
  model.float16 = h.float16;
  return model;
}

}  // namespace

}  // namespace zibert
