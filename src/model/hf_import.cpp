#include "zibert/model/hf_import.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <set>

#include "zibert/base/error.hpp"
#include "zibert/base/io.hpp"
#include "zibert/base/utf8.hpp"
#include "zibert/model/hf_config.hpp"
#include "zibert/model/torch_checkpoint.hpp"

namespace zibert {

namespace {

namespace fs = std::filesystem;

// The weight files: safetensors first, as transformers prefers them.
class Weights {
 public:
  explicit Weights(const fs::path& dir) {
    for (const char* single : {"model.safetensors", "pytorch_model.bin"}) {
      const fs::path index = dir / (std::string(single) + ".index.json");
      if (fs::exists(dir / single)) {
        load(dir / single);
        return;
      }
      if (fs::exists(index)) {
        const nlohmann::json j = hf_json_file(index);
        if (!j.contains("weight_map") || !j["weight_map"].is_object())
          throw Error(index.string() + ": has no weight_map");
        std::set<std::string> shards;
        for (const auto& [name, shard] : j["weight_map"].items()) {
          if (!shard.is_string()) throw Error(index.string() + ": weight_map[" + name + "] is not a file name");
          const std::string s = shard.get<std::string>();
          if (s.find('/') != std::string::npos || s == ".." || s.empty())
            throw Error(index.string() + ": shard \"" + s + "\" is not a file of the directory");
          shards.insert(s);
        }
        for (const std::string& s : shards) load(dir / s);
        return;
      }
    }
    throw Error(dir.string() + ": no weights (model.safetensors or pytorch_model.bin, or their .index.json)");
  }

  std::map<std::string, StridedTensor> tensors;
  std::vector<std::string> files;
  std::map<std::string, std::string> file_of;  // tensor → its file, for messages

 private:
  void load(const fs::path& path) {
    if (!fs::exists(path)) throw Error(path.string() + ": missing (the index names it)");
    files.push_back(path.filename().string());
    maps_.push_back(std::make_unique<MappedFile>(path.string()));
    const std::string_view bytes = maps_.back()->bytes();
    std::vector<std::pair<std::string, StridedTensor>> found;
    if (path.extension() == ".safetensors") {
      for (auto& [name, t] : decode_safetensors(bytes, path.string()).tensors) found.emplace_back(name, strided(t));
    } else {
      found = read_torch_state_dict(bytes, path.string());
    }
    for (auto& [name, t] : found) {
      if (!tensors.emplace(name, t).second) throw Error(path.string() + ": tensor " + name + " is in two weight files");
      file_of[name] = path.string();
    }
  }
  std::vector<std::unique_ptr<MappedFile>> maps_;
};

// transformers' names, with or without "bert.", LayerNorm's gamma/beta as
// weight/bias: the name zibert's layout uses.
std::string canonical(std::string name) {
  for (const char* part : {"embeddings.", "encoder.", "pooler."})
    if (name.starts_with(part)) name = "bert." + name;
  if (name.find("LayerNorm.") != std::string::npos) {
    if (name.ends_with(".gamma")) name = name.substr(0, name.size() - 5) + "weight";
    if (name.ends_with(".beta")) name = name.substr(0, name.size() - 4) + "bias";
  }
  return name;
}

std::string shape_text(const std::vector<std::int64_t>& shape) {
  std::string s;
  for (auto d : shape) s += (s.empty() ? "" : ",") + std::to_string(d);
  return "[" + s + "]";
}

}  // namespace

Model import_hf_checkpoint(const std::string& dir_name) {
  const fs::path dir(dir_name);
  if (!fs::is_directory(dir)) throw Error(dir_name + ": not a directory (a Hugging Face checkpoint is one)");
  for (const char* needed : {"config.json", "vocab.txt"})
    if (!fs::exists(dir / needed)) throw Error((dir / needed).string() + ": missing");
  HfConfig h = read_hf_config(dir / "config.json");
  ModelConfig config = h.config;
  std::vector<std::string> tokens = read_hf_vocab(dir / "vocab.txt");
  if (static_cast<std::int64_t>(tokens.size()) != config.vocab_size)
    throw Error((dir / "vocab.txt").string() + ": " + std::to_string(tokens.size()) + " tokens, but config.json's vocab_size is " +
                std::to_string(config.vocab_size));
  Tokenizer tokenizer = h.character ? read_hf_character_tokenizer(dir, tokens) : Tokenizer();
  if (!h.character) {
    const WordPieceOptions options = read_hf_tokenizer_options(dir);
    try {
      tokenizer = Tokenizer(WordPiece(std::move(tokens), options));
    } catch (const Error& e) {
      throw Error((dir / "vocab.txt").string() + ": " + e.what());
    }
  }
  Weights weights(dir);
  std::map<std::string, std::pair<std::string, const StridedTensor*>> by_name;  // canonical → original, tensor
  for (const auto& [name, t] : weights.tensors) {
    const std::string c = canonical(name);
    if (!by_name.emplace(c, std::pair{name, &t}).second)
      throw Error(weights.file_of.at(name) + ": tensors " + by_name[c].first + " and " + name + " are the same weight");
  }
  auto has = [&](const std::string& n) { return by_name.count(n) > 0; };
  // Which model: a sequence classifier (classifier.* and its architecture), else an encoder.
  const bool sequence = std::find(h.architectures.begin(), h.architectures.end(), "BertForSequenceClassification") !=
                        h.architectures.end();
  nlohmann::json origin = {{"format", "huggingface"}, {"checkpoint", fs::absolute(dir).lexically_normal().filename().string()},
                           {"architectures", h.architectures}, {"weights", weights.files}};
  if (fs::absolute(dir).lexically_normal().filename().empty())
    origin["checkpoint"] = fs::absolute(dir).lexically_normal().parent_path().filename().string();
  bool fresh_head = false;
  if (has("classifier.weight") && !sequence)
    throw Error((dir / "config.json").string() + ": the weights hold classifier.* but architectures does not say "
                "BertForSequenceClassification (token classification is not something zibert does)");
  if (sequence) {
    if (!has("classifier.weight")) throw Error(weights.files[0] + ": a BertForSequenceClassification without classifier.weight");
    config.task = Task::classify;
    config.labels = by_name.at("classifier.weight").second->shape.empty() ? 0 : by_name.at("classifier.weight").second->shape[0];
    if (config.labels < 2) throw Error((dir / "config.json").string() + ": a classifier of fewer than 2 labels (regression?)");
    if (h.labels.empty())
      for (std::int64_t i = 0; i < config.labels; ++i) h.labels.push_back("LABEL_" + std::to_string(i));
    if (static_cast<std::int64_t>(h.labels.size()) != config.labels)
      throw Error((dir / "config.json").string() + ": id2label has " + std::to_string(h.labels.size()) +
                  " labels, classifier.weight " + std::to_string(config.labels));
  } else {
    config.multi_label = false;
    config.pooler = has("bert.pooler.dense.weight");
    config.tie_decoder = h.tie_word_embeddings;
    fresh_head = !has("cls.predictions.transform.dense.weight");
    if (!has("cls.predictions.bias") && has("cls.predictions.decoder.bias"))
      by_name["cls.predictions.bias"] = by_name.at("cls.predictions.decoder.bias");
  }
  try {
    config.validate();
  } catch (const Error& e) {
    throw Error((dir / "config.json").string() + ": " + e.what());
  }
  // Every tensor the layout needs, with its shape, before anything is allocated.
  const std::vector<TensorInfo> layout = parameter_layout(config);
  std::set<std::string> used;
  for (const TensorInfo& t : layout) {
    const bool head = t.name.starts_with("cls.predictions.");
    if (fresh_head && head) continue;
    auto it = by_name.find(t.name);
    if (it == by_name.end()) throw Error(dir_name + ": the weights have no " + t.name);
    const StridedTensor& s = *it->second.second;
    if (s.shape != t.shape)
      throw Error(weights.file_of.at(it->second.first) + ": tensor " + it->second.first + " has shape " +
                  shape_text(s.shape) + ", config.json needs " + shape_text(t.shape));
    if (!is_float_dtype(s.dtype))
      throw Error(weights.file_of.at(it->second.first) + ": tensor " + it->second.first + " is " + dtype_name(s.dtype) +
                  ", not a float (F32, F16, BF16)");
    used.insert(it->second.first);
  }
  // What the files hold and zibert does not use: listed, when BERT has it; anything else is refused.
  nlohmann::json ignored = nlohmann::json::array();
  for (const auto& [c, named] : by_name) {
    if (used.count(named.first)) continue;
    const bool known = c == "bert.embeddings.position_ids" || c.starts_with("cls.seq_relationship.") ||
                       c.starts_with("cls.predictions.") || c == "bert.pooler.dense.weight" || c == "bert.pooler.dense.bias";
    if (!known) throw Error(weights.file_of.at(named.first) + ": tensor " + named.first + " is not part of BERT as zibert computes it");
    if (c == "cls.predictions.decoder.weight" && config.tie_decoder) continue;  // the tied word embeddings
    if (c == "cls.predictions.decoder.bias" && !sequence) continue;             // the same as cls.predictions.bias
    if (std::find(ignored.begin(), ignored.end(), named.first) == ignored.end()) ignored.push_back(named.first);
  }
  origin["ignored"] = ignored;
  if (!sequence) origin["mlm_head"] = fresh_head ? "initialised (not in the checkpoint)" : "from the checkpoint";
  Model model{config, std::move(tokenizer), ClassifierPart{}, nlohmann::json{{"origin", origin}},
              Bert<float>(config, /*trainable=*/false), std::nullopt};
  if (sequence) {
    model.classifier.labels = h.labels;
    model.classifier.windows = h.windows;
    if (!h.positive.empty() && std::find(h.labels.begin(), h.labels.end(), h.positive) != h.labels.end() &&
        !config.multi_label)
      model.classifier.positive = h.positive;
    try {
      model.classifier.check_windows(config.multi_label);
    } catch (const Error& e) {
      throw Error((dir / "config.json").string() + ": zibert.windows: " + e.what());
    }
  }
  if (fresh_head) model.net.init_weights(0);
  for (const TensorInfo& t : layout) {
    auto it = by_name.find(t.name);
    if (it == by_name.end()) continue;  // a freshly initialised head
    float* dst = model.net.params().data() + t.offset;
    it->second.second->copy_to(dst);
    for (std::size_t i = 0; i < t.size; ++i)
      if (!std::isfinite(dst[i]))
        throw Error(weights.file_of.at(it->second.first) + ": tensor " + it->second.first + " holds a NaN or infinity");
  }
  return model;
}

}  // namespace zibert
