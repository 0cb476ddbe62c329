// A trained classifier as stored on disk (DESIGN §5): the network's weights
// under Hugging Face names plus the zibert metadata.
#pragma once
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

#include "zibert/model/model.hpp"

namespace zibert {

inline constexpr const char* kFormatName = "zibert";
inline constexpr int kFormatVersion = 1;

// The bytes of the model file (deterministic for the same weights and metadata).
std::string encode_model(const Model& model);
// Writes atomically: the old file stays intact if anything fails.
void save_model(const std::string& path, const Model& model);
// Validates everything: metadata, config, vocab, every tensor's name and shape,
// finite weights. Throws Error naming the file.
Model load_model(const std::string& path);
Model decode_model(std::string_view bytes, const std::string& name);

// Training state for train --resume: a model file of the current weights whose
// training metadata holds {"checkpoint": state}, plus flat F32 tensors
// zibert.adam.m, zibert.adam.v (AdamW's moments) and zibert.best (the best
// epoch's weights so far). Written atomically like a model.
struct Checkpoint {
  Model model;
  std::vector<float> adam_m, adam_v, best;
  const nlohmann::json& state() const { return model.training.at("checkpoint"); }
};
std::string encode_checkpoint(const Checkpoint& checkpoint);
// Writes the checkpoint file from a training run's own arrays, with training
// as the model's training record, copying none of them: at bert-base's shape
// a checkpoint is 1.6 GB.
void save_checkpoint(const std::string& path, const Model& model, const nlohmann::json& training,
                     std::span<const float> adam_m, std::span<const float> adam_v, std::span<const float> best);
Checkpoint load_checkpoint(const std::string& path);

}  // namespace zibert
