// From texts to padded batches: [CLS] text [SEP], windows over long texts, and
// length-bucketed batch plans that keep padding small.
#pragma once
#include <cstdint>
#include <vector>

#include "zibert/text/vocab.hpp"

#include "zibert/nn/layers.hpp"
#include "zibert/nn/tensor.hpp"

namespace zibert {

// A padded batch of token ids, [PAD] = 0 after each sequence's end.
struct Batch {
  Index size = 0;                    // B
  Index seq = 0;                     // T
  std::vector<std::int32_t> ids;     // (B*T)
  std::vector<std::int32_t> labels;  // (B), may be empty for inference
  std::vector<std::uint8_t> targets; // (B*K) 0/1: a multi-label batch's labels (labels then empty)
  bool labelled() const { return !labels.empty() || !targets.empty(); }
  double label_smoothing = 0;        // ε: a single-label batch's targets are (1 − ε)·onehot + ε/K (train --label-smoothing)
  SoftTargets soft;                  // a distillation batch's teacher distribution (labels: gold or kNoGold)
  Index first = 0;                   // position of this batch's first example in a larger batch it is part of
  // Sequences [from, from + count) as a batch of their own (their labels, if
  // any and with_labels; first counts from the whole), for splitting over
  // threads or groups.
  Batch part(Index from, Index count, bool with_labels = true) const;
  // The same into out, reusing its vectors' memory (no allocation once they are large enough).
  void part_into(Index from, Index count, Batch& out, bool with_labels = true) const;
};

// A batch for the masked-language-model objective (train/masking.hpp draws
// them): some tokens replaced, and which they were.
struct MaskedBatch {
  Batch batch;                           // the ids with the chosen tokens replaced (labels empty)
  std::vector<std::int32_t> positions;   // rows b*T+t of the chosen tokens, ascending
  std::vector<std::int32_t> targets;     // their original ids (may be empty to predict)
  // Sequences [from, from + count) with their chosen positions (renumbered), reusing out's memory.
  void part_into(Index from, Index count, MaskedBatch& out) const;
};

// [CLS] ids [SEP], with ids cut to max_len − 2.
std::vector<std::int32_t> with_specials(const std::vector<std::int32_t>& ids, std::int64_t max_len,
                                        const SpecialIds& specials);

// Overlapping windows covering a text of `length` characters: each at most
// `width` long, consecutive ones overlapping by half. Returns start offsets.
std::vector<std::int64_t> window_starts(std::int64_t length, std::int64_t width);

// Packs sequences (already with specials) into one batch padded with [PAD].
Batch pack_batch(const std::vector<const std::vector<std::int32_t>*>& seqs, const std::vector<std::int32_t>& labels);

// Labelled sequences ready for batching, as training and bench hold them.
struct SequenceSet {
  std::vector<std::vector<std::int32_t>> seqs;  // [CLS] text [SEP], cut to max_len
  std::vector<std::int32_t> labels;
  std::vector<std::vector<std::uint8_t>> targets;  // multi-label rows instead: (K) 0/1 each
  std::vector<std::int64_t> lengths;            // of seqs, specials included
  std::int64_t truncated = 0;                   // texts that were cut
  SpecialIds specials;                          // the [CLS] and [SEP] add() wraps with
  void add(const std::vector<std::int32_t>& ids, std::int32_t label, std::int64_t max_len);
  void add(const std::vector<std::int32_t>& ids, std::vector<std::uint8_t> targets, std::int64_t max_len);
};

// The batch of these members; without labels when labelled is false.
Batch batch_of(const SequenceSet& set, const std::vector<std::size_t>& members, bool labelled = true);

// Splits items into batches of at most batch_size whose members have similar
// lengths. With a seed, items are shuffled, sorted by length inside pools of
// 50 batches, and the batch order shuffled; without, items are sorted by length.
std::vector<std::vector<std::size_t>> bucketed_batches(const std::vector<std::int64_t>& lengths,
                                                       std::size_t batch_size, const std::uint64_t* seed);

}  // namespace zibert
