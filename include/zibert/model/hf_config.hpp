// The files of a Hugging Face BERT checkpoint directory besides its weights:
// config.json, vocab.txt and the tokenizer's settings, each read with bounds
// and checked, every Error prefixed with the file at fault.
#pragma once
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "zibert/model/model.hpp"
#include "zibert/text/wordpiece.hpp"

namespace zibert {

// A JSON object from a file of at most 64 MB, nested within the JSON depth bound.
nlohmann::json hf_json_file(const std::filesystem::path& path);

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

HfConfig read_hf_config(const std::filesystem::path& file);

// vocab.txt: one token per line, as transformers' load_vocab reads it (only
// the "\n" is cut). Each line must be UTF-8 and not empty.
std::vector<std::string> read_hf_vocab(const std::filesystem::path& path);

// The tokenizer settings: tokenizer_config.json, overridden by tokenizer.json's
// normalizer when present; Hugging Face's defaults otherwise.
WordPieceOptions read_hf_tokenizer_options(const std::filesystem::path& dir);

// zibert's character tokenizer, for a checkpoint zibert export --hf wrote of
// one of its own models: the vocabulary, lower-casing as tokenizer_config.json
// says, and the variants tokenizer.json lists as second names of ids.
Tokenizer read_hf_character_tokenizer(const std::filesystem::path& dir, const std::vector<std::string>& tokens);

}  // namespace zibert
