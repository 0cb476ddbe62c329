// A model's shape (DESIGN §3) and the parameter tensors it implies, named as
// Hugging Face names them, with the one JSON form the model file stores.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace zibert {

// What the network ends in: a classifier (pooler + classifier over [CLS]) or
// BERT's masked-language-model head (an encoder, zibert pretrain).
enum class Task { classify, mlm };
const char* task_name(Task t);
Task task_from_name(const std::string& name);  // throws Error naming the choices

// The reading channel (ChineseBERT's pinyin embedding, Sun et al. 2021):
// every token read as one or more Mandarin syllables (tones dropped) gains
// the mean of their rows of bert.embeddings.reading_embeddings.weight
// (syllables, C), so that characters read alike start out alike.
struct TokenReadings {
  std::vector<std::string> syllables;               // S, one per row
  std::vector<std::vector<std::int32_t>> of_token;  // V lists of rows; empty for a token with no reading
  bool operator==(const TokenReadings&) const = default;
};

struct ModelConfig {
  std::int64_t vocab_size = 0;
  std::int64_t max_len = 128;  // positions, including [CLS] and [SEP]
  std::int64_t dim = 64;       // C
  std::int64_t heads = 4;      // H
  std::int64_t ffn = 256;      // F
  std::int64_t layers = 2;     // L
  std::int64_t labels = 2;     // K (0 for an encoder)
  Task task = Task::classify;
  // One sigmoid per label trained with binary cross-entropy (fastText's -loss
  // ova; Hugging Face's problem_type "multi_label_classification"): a text
  // may carry any number of the labels. Else one softmax over them.
  bool multi_label = false;
  double dropout = 0.1;
  double layer_norm_eps = 1e-12;
  // Ablations for the experiments of DESIGN §0; the defaults are BERT.
  bool tie_qk = false;    // one projection for queries and keys (no key.weight/key.bias)
  bool position = true;   // learned position embeddings
  // What imported Hugging Face checkpoints carry and zibert's own models do
  // not (their files have none of these fields):
  // token type embeddings (type_vocab_size rows; every input is one segment,
  // so row 0 is added to every token), a pooler kept by an encoder (task mlm)
  // for the classifier fine-tuned from it, and a masked-LM decoder of its own
  // instead of the word embeddings.
  std::int64_t type_vocab_size = 0;
  bool pooler = false;       // task mlm only: bert.pooler.* (a classifier always has one)
  bool tie_decoder = true;   // task mlm only: false adds cls.predictions.decoder.weight
  // zibert's own option (train --reading-channel); null: none, as in BERT.
  std::shared_ptr<const TokenReadings> readings;
  void validate() const;  // throws Error on an impossible shape
};

struct TensorInfo {
  std::string name;
  std::vector<std::int64_t> shape;
  std::size_t offset = 0;  // in elements, into the flat buffer
  std::size_t size = 0;    // number of elements
  bool decay = false;      // AdamW weight decay applies (matrices only)
};

// Every parameter of a model with this config, in buffer order: the
// encoder (bert.embeddings.*, bert.encoder.*), then the task's head
// (bert.pooler.* and classifier.*, or cls.predictions.*, whose decoder is
// the word embeddings unless untied; an encoder's kept pooler comes first).
std::vector<TensorInfo> parameter_layout(const ModelConfig& config);

// The tensors of the encoder alone (what fine-tuning takes from an encoder).
bool is_encoder_tensor(const std::string& name);

// The config as the model file stores it, and back (a missing tie_qk or
// position_embeddings reads as BERT's default, a missing task as classify). Throws nlohmann's errors on a
// missing or mistyped field; validate() checks the values.
nlohmann::json config_to_json(const ModelConfig& config);
ModelConfig config_from_json(const nlohmann::json& j);

}  // namespace zibert
