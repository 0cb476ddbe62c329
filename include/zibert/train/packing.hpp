// Raw text into masked-LM sequences (pretrain): consecutive lines
// packed into sequences of up to max_len tokens, so that little compute goes
// to padding.
#pragma once
#include <cstdint>
#include <vector>

#include "zibert/model/batch.hpp"

namespace zibert {

// [CLS] line [SEP] line [SEP] …: lines (ids without specials) are appended
// whole, in order, while they fit in max_len; the next line starts the next
// sequence. A line longer than max_len − 2 is cut into pieces of max_len − 2,
// each a sequence of its own, and what is left of it (shorter) opens the
// next sequence, which later lines may join. Empty lines are skipped.
std::vector<std::vector<std::int32_t>> pack_lines(const std::vector<std::vector<std::int32_t>>& lines,
                                                  std::int64_t max_len, const SpecialIds& specials);

// The same as a SequenceSet (no labels), ready for batching: what pretrain
// trains on and bench --mlm times.
SequenceSet packed_sequences(const std::vector<std::vector<std::int32_t>>& lines, std::int64_t max_len,
                             const SpecialIds& specials);

}  // namespace zibert
