// More inputs for distillation made from the labelled texts, for when
// unlabelled text is scarce (TinyBERT's data augmentation, Jiao et al. 2020):
// some characters of a text replaced by an encoder's fill-mask guesses, or,
// without an encoder, deleted. The teachers label each new text; it carries
// no gold label.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "zibert/model/model.hpp"

namespace zibert {

struct AugmentOptions {
  std::int64_t copies = 0;   // new texts per text
  double share = 0.15;       // of a text's characters changed in each (at least one)
  int top_k = 8;             // the guesses a replacement is drawn from
  std::uint64_t seed = 42;
};

// copies new texts for each of texts, in order (text 0's copies first); a
// copy equal to its text or to an earlier copy is still kept, so that the
// count is always texts × copies. encoder (optional) is a character
// encoder (zibert pretrain's): chosen characters become [MASK] together and
// each takes one of its top_k guesses at random (never the character it
// replaces, nor a special); without it they are deleted. Deterministic in
// the seed and the texts.
std::vector<std::string> augment_texts(const std::vector<std::string>& texts, const AugmentOptions& options,
                                       const Model* encoder);

}  // namespace zibert
