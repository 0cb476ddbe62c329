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
#include "zibert/model/torch_checkpoint.hpp"

namespace zibert {

namespace {

namespace fs = std::filesystem;

constexpr std::uintmax_t kMaxJsonFile = 64u << 20;  // tokenizer.json of a big vocabulary is a few MB
constexpr std::uintmax_t kMaxVocabFile = 256u << 20;

std::string file_text(const fs::path& path, std::uintmax_t limit) {
  std::error_code ec;
  const auto size = fs::file_size(path, ec);
  if (ec) throw Error(path.string() + ": cannot read (" + ec.message() + ")");
  if (size > limit) throw Error(path.string() + ": " + std::to_string(size) + " bytes, more than such a file holds");
  std::ifstream in(path, std::ios::binary);
  std::string s(size, '\0');
  if (!in.read(s.data(), static_cast<std::streamsize>(size))) throw Error(path.string() + ": cannot read");
  return s;
}

nlohmann::json json_file(const fs::path& path) {
  const std::string text = file_text(path, kMaxJsonFile);
  if (json_nesting_depth(text) > kMaxJsonDepth)
    throw Error(path.string() + ": JSON nested more than " + std::to_string(kMaxJsonDepth) + " deep");
  try {
    nlohmann::json j = nlohmann::json::parse(text);
    if (!j.is_object()) throw Error(path.string() + ": not a JSON object");
    return j;
  } catch (const nlohmann::json::exception& e) {
    throw Error(path.string() + ": not JSON (" + e.what() + ")");
  }
}

// vocab.txt: one token per line, as transformers' load_vocab reads it (only
// the "\n" is cut). Each line must be UTF-8; WordPiece refuses empty and
// duplicated tokens, naming them.
std::vector<std::string> read_vocab(const fs::path& path) {
  const std::string text = file_text(path, kMaxVocabFile);
  std::vector<std::string> tokens;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string token = text.substr(start, end - start);
    if (invalid_utf8_offset(token) >= 0)
      throw Error(path.string() + ":" + std::to_string(tokens.size() + 1) + ": invalid UTF-8");
    if (token.empty())
      throw Error(path.string() + ":" + std::to_string(tokens.size() + 1) + ": an empty line where a token belongs");
    tokens.push_back(std::move(token));
    start = end + 1;
  }
  return tokens;
}

template <class T>
T field(const nlohmann::json& j, const char* key, T fallback, const fs::path& file) {
  if (!j.contains(key) || j[key].is_null()) return fallback;
  try {
    return j[key].get<T>();
  } catch (const nlohmann::json::exception&) {
    throw Error(file.string() + ": \"" + key + "\" is " + j[key].dump() + ", not of the expected type");
  }
}

std::int64_t size_field(const nlohmann::json& j, const char* key, const fs::path& file, std::int64_t lo,
                        std::int64_t hi) {
  if (!j.contains(key)) throw Error(file.string() + ": has no \"" + key + "\"");
  if (!j[key].is_number_integer()) throw Error(file.string() + ": \"" + key + "\" is not an integer");
  const auto v = j[key].get<std::int64_t>();
  if (v < lo || v > hi)
    throw Error(file.string() + ": \"" + key + "\" is " + std::to_string(v) + ", outside " + std::to_string(lo) +
                ".." + std::to_string(hi));
  return v;
}

// What a BertConfig says, refusing what zibert's BERT does not compute.
struct HfConfig {
  ModelConfig config;
  std::vector<std::string> architectures;
  std::vector<std::string> labels;  // id2label, ordered by id
  bool tie_word_embeddings = true;
  std::optional<Windows> windows;  // "zibert": {"windows", "positive_label"} of zibert export --hf
  std::string positive;
  bool character = false;  // zibert export --hf of a character-tokenizer model ("zibert": {"tokenizer": "character"})
};

HfConfig read_config(const fs::path& file) {
  const nlohmann::json j = json_file(file);
  HfConfig h;
  const std::string model_type = field<std::string>(j, "model_type", "", file);
  h.architectures = field<std::vector<std::string>>(j, "architectures", {}, file);
  if (model_type != "bert" && !(model_type.empty() && !h.architectures.empty() && h.architectures[0].starts_with("Bert")))
    throw Error(file.string() + ": model_type \"" + model_type + "\" is not BERT's (\"bert\"), which is the one zibert reads");
  for (const std::string& a : h.architectures)
    for (const char* refused : {"BertForTokenClassification", "BertForQuestionAnswering", "BertForMultipleChoice",
                                "BertLMHeadModel"})
      if (a == refused)
        throw Error(file.string() + ": a " + a + " checkpoint; zibert classifies whole texts "
                    "(BertForSequenceClassification) and reads encoders (BertModel, BertForMaskedLM, BertForPreTraining)");
  const std::string act = field<std::string>(j, "hidden_act", "gelu", file);
  if (act != "gelu") throw Error(file.string() + ": hidden_act \"" + act + "\"; zibert computes BERT's erf GELU (\"gelu\") only");
  const std::string pos = field<std::string>(j, "position_embedding_type", "absolute", file);
  if (pos != "absolute")
    throw Error(file.string() + ": position_embedding_type \"" + pos + "\"; zibert has absolute positions only");
  if (field<bool>(j, "is_decoder", false, file) || field<bool>(j, "add_cross_attention", false, file))
    throw Error(file.string() + ": a decoder (is_decoder / add_cross_attention); zibert's BERT is an encoder");
  for (const char* ernie : {"use_task_id", "task_type_vocab_size"})
    if (j.contains(ernie) && !j[ernie].is_null() && j[ernie] != false)
      throw Error(file.string() + ": \"" + ernie + "\" (ERNIE's task embeddings), which zibert does not have");
  if (field<std::int64_t>(j, "pad_token_id", 0, file) != 0)
    throw Error(file.string() + ": pad_token_id is not 0; zibert pads with id 0");
  ModelConfig& c = h.config;
  c.vocab_size = size_field(j, "vocab_size", file, 6, 10'000'000);
  c.dim = size_field(j, "hidden_size", file, 1, 65536);
  c.layers = size_field(j, "num_hidden_layers", file, 1, 256);
  c.heads = size_field(j, "num_attention_heads", file, 1, 65536);
  c.ffn = size_field(j, "intermediate_size", file, 1, 262144);
  c.max_len = size_field(j, "max_position_embeddings", file, 3, 65536);
  c.type_vocab_size = j.contains("type_vocab_size") ? size_field(j, "type_vocab_size", file, 1, 1024) : 2;
  c.layer_norm_eps = field<double>(j, "layer_norm_eps", 1e-12, file);
  c.dropout = field<double>(j, "hidden_dropout_prob", 0.1, file);
  h.tie_word_embeddings = field<bool>(j, "tie_word_embeddings", true, file);
  if (j.contains("zibert") && j["zibert"].is_object()) {
    const nlohmann::json& z = j["zibert"];
    h.character = z.value("tokenizer", "") == "character";
    h.positive = z.value("positive_label", "");
    try {
      if (z.contains("windows")) h.windows = windows_from_name(z.value("windows", ""));
    } catch (const Error& e) {
      throw Error(file.string() + ": zibert.windows: " + e.what());
    }
  }
  const std::string problem = field<std::string>(j, "problem_type", "single_label_classification", file);
  if (problem == "regression") throw Error(file.string() + ": problem_type regression; zibert classifies");
  if (problem != "single_label_classification" && problem != "multi_label_classification")
    throw Error(file.string() + ": problem_type \"" + problem + "\" is not one zibert knows");
  c.multi_label = problem == "multi_label_classification";
  if (j.contains("id2label") && j["id2label"].is_object()) {
    std::map<std::int64_t, std::string> by_id;
    for (const auto& [k, v] : j["id2label"].items()) {
      std::size_t used = 0;
      std::int64_t id = -1;
      try {
        id = std::stoll(k, &used);
      } catch (const std::exception&) {
      }
      if (used != k.size() || id < 0 || !v.is_string())
        throw Error(file.string() + ": id2label has an entry \"" + k + "\" that is not id → name");
      by_id[id] = v.get<std::string>();
    }
    for (const auto& [id, name] : by_id) {
      if (id != static_cast<std::int64_t>(h.labels.size())) throw Error(file.string() + ": id2label skips an id");
      h.labels.push_back(name);
    }
  }
  try {
    c.task = Task::mlm;
    c.labels = 0;
    c.validate();
  } catch (const Error& e) {
    throw Error(file.string() + ": " + e.what());
  }
  return h;
}

// The tokenizer settings: tokenizer_config.json, overridden by tokenizer.json's
// normalizer when present; Hugging Face's defaults otherwise.
WordPieceOptions read_tokenizer_options(const fs::path& dir) {
  WordPieceOptions o;
  if (const fs::path f = dir / "tokenizer_config.json"; fs::exists(f)) {
    const nlohmann::json j = json_file(f);
    const std::string cls = field<std::string>(j, "tokenizer_class", "BertTokenizer", f);
    if (cls != "BertTokenizer" && cls != "BertTokenizerFast")
      throw Error(f.string() + ": tokenizer_class " + cls + "; zibert tokenizes as BertTokenizer");
    o.lowercase = field<bool>(j, "do_lower_case", true, f);
    o.handle_chinese_chars = field<bool>(j, "tokenize_chinese_chars", true, f);
    if (j.contains("strip_accents") && !j["strip_accents"].is_null()) o.strip_accents = field<bool>(j, "strip_accents", false, f);
    const std::map<std::string, std::string> specials = {
        {"unk_token", "[UNK]"}, {"sep_token", "[SEP]"}, {"pad_token", "[PAD]"}, {"cls_token", "[CLS]"}, {"mask_token", "[MASK]"}};
    for (const fs::path& g : {f, dir / "special_tokens_map.json"}) {
      if (!fs::exists(g)) continue;
      const nlohmann::json s = g == f ? j : json_file(g);
      for (const auto& [key, want] : specials) {
        if (!s.contains(key)) continue;
        const nlohmann::json& v = s[key];
        const std::string got = v.is_string() ? v.get<std::string>() : v.is_object() ? v.value("content", "") : "";
        if (got != want) throw Error(g.string() + ": " + key + " is \"" + got + "\"; zibert's WordPiece uses " + want);
      }
    }
  }
  if (const fs::path f = dir / "tokenizer.json"; fs::exists(f)) {
    const nlohmann::json j = json_file(f);
    const nlohmann::json n = j.value("normalizer", nlohmann::json());
    if (n.is_object()) {
      if (n.value("type", "") != "BertNormalizer")
        throw Error(f.string() + ": normalizer " + n.value("type", "?") + "; zibert reads BertNormalizer only");
      o.clean_text = field<bool>(n, "clean_text", true, f);
      o.handle_chinese_chars = field<bool>(n, "handle_chinese_chars", true, f);
      o.lowercase = field<bool>(n, "lowercase", true, f);
      o.strip_accents.reset();
      if (n.contains("strip_accents") && !n["strip_accents"].is_null()) o.strip_accents = field<bool>(n, "strip_accents", false, f);
    }
    const nlohmann::json m = j.value("model", nlohmann::json());
    if (m.is_object()) {
      if (m.value("type", "WordPiece") != "WordPiece")
        throw Error(f.string() + ": model " + m.value("type", "?") + "; zibert reads WordPiece only");
      if (m.value("continuing_subword_prefix", "##") != "##")
        throw Error(f.string() + ": continuing_subword_prefix is not \"##\"");
      o.max_input_chars_per_word = field<std::int64_t>(m, "max_input_chars_per_word", 100, f);
    }
  }
  return o;
}

// zibert's character tokenizer, for a checkpoint zibert export --hf wrote of
// one of its own models: the vocabulary, lower-casing as tokenizer_config.json
// says, and the variants tokenizer.json lists as second names of ids.
Tokenizer character_tokenizer(const fs::path& dir, const std::vector<std::string>& tokens) {
  Normalization norm;
  if (const fs::path f = dir / "tokenizer_config.json"; fs::exists(f)) norm.lowercase = field<bool>(json_file(f), "do_lower_case", false, f);
  Vocab vocab;
  try {
    vocab = Vocab::from_tokens(tokens);
  } catch (const Error& e) {
    throw Error((dir / "vocab.txt").string() + ": " + e.what());
  }
  if (const fs::path f = dir / "tokenizer.json"; fs::exists(f)) {
    const nlohmann::json j = json_file(f);
    std::map<char32_t, char32_t> variants;
    if (j.contains("model") && j["model"].is_object() && j["model"].contains("vocab") && j["model"]["vocab"].is_object())
      for (const auto& [key, id] : j["model"]["vocab"].items()) {
        if (!id.is_number_integer() || id.get<std::int64_t>() < 0 || id.get<std::int64_t>() >= vocab.size())
          throw Error(f.string() + ": the id of \"" + key + "\" is not one of the vocabulary's");
        const auto i = static_cast<std::size_t>(id.get<std::int64_t>());
        if (tokens[i] == key) continue;
        std::vector<char32_t> from, to;
        try {
          from = utf8_decode(key), to = utf8_decode(tokens[i]);
        } catch (const Error&) {
          throw Error(f.string() + ": invalid UTF-8 in the vocabulary");
        }
        if (from.size() != 1 || to.size() != 1) throw Error(f.string() + ": \"" + key + "\" is not a variant of one character");
        variants.emplace(from[0], to[0]);
      }
    try {
      vocab.set_variants(std::move(variants));
    } catch (const Error& e) {
      throw Error(f.string() + ": " + e.what());
    }
  }
  return Tokenizer(std::move(vocab), norm);
}

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
        const nlohmann::json j = json_file(index);
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
  HfConfig h = read_config(dir / "config.json");
  ModelConfig config = h.config;
  std::vector<std::string> tokens = read_vocab(dir / "vocab.txt");
  if (static_cast<std::int64_t>(tokens.size()) != config.vocab_size)
    throw Error((dir / "vocab.txt").string() + ": " + std::to_string(tokens.size()) + " tokens, but config.json's vocab_size is " +
                std::to_string(config.vocab_size));
  Tokenizer tokenizer = h.character ? character_tokenizer(dir, tokens) : Tokenizer();
  if (!h.character) {
    const WordPieceOptions options = read_tokenizer_options(dir);
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
