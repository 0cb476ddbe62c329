// Sentence vectors (zibert embed, fastText's print-sentence-vectors): one
// C-wide vector per text from the last layer's states, through the same
// windows and passes as the Predictor.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "zibert/infer/embedding_tables.hpp"
#include "zibert/infer/fast_forward.hpp"
#include "zibert/infer/model_products.hpp"
#include "zibert/model/model.hpp"

namespace zibert {

// mean: the mean of a window's last-layer rows ([CLS], the characters and
// [SEP]; not [PAD]), as sentence-transformers pool under the attention mask.
// cls: the window's [CLS] row (before the pooler).
enum class Pool { mean, cls };

// The model's weights must not change while an Embedder uses it.
class Embedder {
 public:
  // It embeds by the model's ModelProducts: int8 twins for a quantized
  // model, bfloat16 ones under --bf16, else the float32 weights in place.
  Embedder(const Model& model, Pool pool);
  // texts: ids without [CLS]/[SEP] (Tokenizer::encode). A text longer than
  // the window gets its windows' vectors averaged, each weighted by its rows
  // (mean) or equally (cls). Returns (texts, C), row-major.
  std::vector<float> embed_ids(const std::vector<std::vector<std::int32_t>>& texts);
  Index dim() const { return model_.config.dim; }

 private:
  const Model& model_;
  Pool pool_;
  std::unique_ptr<EmbeddingTables<float>> tables_;
  ModelProducts products_;
  std::vector<InferenceCache<float>> caches_;  // one per thread
};

}  // namespace zibert
