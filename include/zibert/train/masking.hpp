// BERT's masked-language-model input: of the non-special tokens,
// 15 % are chosen; of those, 80 % become [MASK], 10 % a random character and
// 10 % stay. The loss is taken on the chosen positions only.
#pragma once
#include <cstdint>
#include <vector>

#include "zibert/model/batch.hpp"

namespace zibert {

// Each token's draws come from (seed, epoch, its sequence's index in the
// whole batch, its position), so the masks are the same however a batch is
// split over threads, and drawn afresh each epoch. [PAD], [UNK], [CLS],
// [SEP] and [MASK] are never chosen; a random replacement is an id in
// [specials.first_regular, vocab_size).
MaskedBatch mask_tokens(const Batch& batch, std::int64_t vocab_size, const SpecialIds& specials, std::uint64_t seed,
                        std::uint64_t epoch, double rate = 0.15);

}  // namespace zibert
