// zibert fill-mask (Hugging Face's fill-mask pipeline): an encoder's guesses
// for each [MASK] of a text, a check anyone can read of what it learnt.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "zibert/model/model.hpp"

namespace zibert {

struct MaskGuess {
  std::int32_t id;
  double probability;
};

// The text's ids with [MASK] for each literal "[MASK]" in it (the pieces
// between are tokenised as any text). Throws Error when it has none.
std::vector<std::int32_t> encode_with_masks(const Tokenizer& tokenizer, const std::string& text);

// For each [MASK] of ids (without [CLS]/[SEP]; at most max_len − 2 of them),
// the top_k tokens by probability, most likely first. Specials are never
// guessed. The encoder must be zibert pretrain's (task mlm).
std::vector<std::vector<MaskGuess>> fill_mask(const Model& encoder, const std::vector<std::int32_t>& ids,
                                              int top_k);

}  // namespace zibert
