// A Hugging Face BERT checkpoint directory as a zibert Model: config.json,
// vocab.txt, tokenizer_config.json / special_tokens_map.json / tokenizer.json
// when present, and the weights in model.safetensors or pytorch_model.bin
// (either one sharded with its *.index.json). What zibert cannot compute
// exactly as transformers does is an Error naming it, never a different model.
#pragma once
#include <string>

#include "zibert/model/model.hpp"

namespace zibert {

// The model, with training["origin"] saying where it came from (directory,
// architectures, weight files, ignored tensors, whether the masked-LM head was
// in the checkpoint). A BertForSequenceClassification checkpoint becomes a
// classifier with its id2label; any other BERT an encoder (task mlm).
// Nothing is allocated for weights until every tensor the config implies was
// found with its shape in the weight files, so the model takes at most twice
// the files' bytes (F16/BF16 widen to float32). Throws Error, prefixed with
// the file at fault.
Model import_hf_checkpoint(const std::string& dir);

}  // namespace zibert
