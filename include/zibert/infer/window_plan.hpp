// How texts of any length become inference passes: each text is cut into
// windows of the model's width (overlapping by half), windows of similar
// length go into batches of at most 32, padded to the longest, and each
// batch is cut into passes of about kPredictRows token rows, so that a
// pass's activations stay in a core's L2 cache. The Predictor and the
// Embedder share it.
#pragma once
#include <cstdint>
#include <vector>

#include "zibert/model/batch.hpp"

namespace zibert {

struct Window {
  std::size_t text;               // which text
  std::int64_t start;             // its first character's offset in the text
  std::vector<std::int32_t> ids;  // with [CLS] and [SEP]
};

struct WindowPlan {
  std::vector<Window> windows;
  std::vector<Batch> passes;                     // unlabelled, padded
  std::vector<std::vector<std::size_t>> members;  // the windows of each pass, row by row
  std::int64_t padded_tokens = 0;                // rows of all passes, padding included
};

// texts: token ids without [CLS]/[SEP]; max_len: the model's.
WindowPlan plan_windows(const std::vector<std::vector<std::int32_t>>& texts, std::int64_t max_len,
                        const SpecialIds& specials);

}  // namespace zibert
