// A zibert model as a Hugging Face checkpoint directory: config.json,
// vocab.txt, tokenizer_config.json and model.safetensors under transformers'
// names (and, for zibert's character tokenizer, a tokenizer.json that gives
// its ids to Hugging Face's fast tokenizers), which BertForSequenceClassification (a classifier), BertForMaskedLM
// (an encoder) and BertModel load.
#pragma once
#include <string>

#include "zibert/model/model.hpp"

namespace zibert {

// Writes the files into dir (made if missing), each atomically. A
// calibration temperature is folded into the classifier (W/T, b/T: the same
// softmax); a model without token types gets type_vocab_size 2 of zeros (its
// inputs are one segment, so nothing changes). How windows combine is kept in
// config.json under "zibert", which transformers ignores. Throws Error for
// what transformers cannot represent: int8 models, tied query and key
// projections, no position embeddings.
void export_hf_checkpoint(const Model& model, const std::string& dir);

}  // namespace zibert
