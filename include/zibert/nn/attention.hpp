// Multi-head self-attention with a key-padding mask: [CLS] and every character
// query the others, softmax weighs the answers, the weighted values aggregate.
#pragma once
#include <cstdint>
#include <span>

#include "zibert/nn/layers.hpp"

namespace zibert {

template <class T>
struct AttentionCache {
  // forward (every row as a query):
  Buffer<T> qkv;    // (B*T, 3C): q | k | v, heads side by side in each; (B*T, 2C) q | v when tied
  Buffer<T> probs;  // softmax weights: kept for backward, (B*H*T, T) with row (b*H+h)*T+i for query i
                    // of head h, while they fit in kept_weights; past that (and at inference) one
                    // (T, T) block per thread, reused for every (sequence, head), and backward
                    // recomputes the weights from q and k
  Buffer<T> ctx;    // (B*T, C): weighted values, heads side by side ((B, C) for the [CLS] forms)
  Buffer<T> row_sums;  // (threads, T): each query row's softmax sum when the rows are unnormalised
  // forward_rows (M listed rows as the only queries): probs is then (M*H, T)
  Buffer<T> kv;     // (B*T, 2C): k | v of every row
  Buffer<T> xq;     // (M, C) the listed rows of x
  Buffer<T> q;      // (M, C) their queries
  // forward_cls_folded (inference): no keys or values; xq and q hold the B [CLS] rows
  Buffer<T> folded; // (2*B*H, C): u = q_h Wk_h per (sequence, head), then z = Σ_t p_t x_t
  // backward scratch
  Buffer<T> dqkv;   // (B*T, 3C or 2C); backward_rows: (B*T, 2C) dk | dv
  Buffer<T> dctx;   // (B*T, C)
  Buffer<T> dprobs; // (threads*T, T), one (T,T) block per thread
  Buffer<T> key_bias_grad;  // (1, C) saved across the qkv backward
  Buffer<T> dq;     // (M, C) backward_rows
  Buffer<T> dxq;    // (M, C)
};

// The most attention weights (floats, B*H*T² a layer) a training forward
// keeps for backward: 8 MB, which the small shapes' batches fit in. Larger
// ones (768 wide, 512 positions: 100 MB a layer) are recomputed in backward,
// one (T, T) block at a time, trading a q kᵀ product for the memory.
inline constexpr Index kKeptWeights = Index(1) << 21;

// How attend leaves each block of weights: normalised rows, the same bits
// backward recomputes (training), or unnormalised rows with their sums in
// cache.row_sums, each query's weighted values divided by its sum after the
// product: D divisions instead of T, equal up to rounding (inference).
enum class WeightRows { normalised, unnormalised };

template <class T>
struct SelfAttention {
  Linear<T> qkv;     // weight (3C, C): query, key and value projections stacked;
                     // (2C, C) query and value when tied (keys are the queries)
  Linear<T> output;  // weight (C, C)
  Index heads = 1;
  bool tied = false;
  Index kept_weights = kKeptWeights;  // the most weights a training forward keeps (0: backward recomputes)

  // x (B*T, C) → y (B*T, C): the projections, attend, the output projection.
  // key_valid (B*T): 0 marks a [PAD] key that gets zero weight. Fills
  // cache.qkv, cache.ctx and, when keeps_weights, cache.probs: all backward needs.
  void forward(const CRef<T>& x, Index batch, Index seq, const std::uint8_t* key_valid, AttentionCache<T>& cache,
               Ref<T> y) const;
  // The heads between the projections: cache.qkv (B*T, 3C or 2C) → cache.ctx
  // (B*T, C), concat_h(softmax(q_h k_hᵀ/√D + mask) v_h). The inference pass
  // calls it between products of its own (float, or int8), with unnormalised
  // rows; backward needs normalised ones.
  void attend(Index batch, Index seq, const std::uint8_t* key_valid, AttentionCache<T>& cache,
              WeightRows weight_rows) const;
  // True when a training forward keeps the weights (B*H*T² ≤ kept_weights).
  bool keeps_weights(Index batch, Index seq) const { return batch * heads * seq * seq <= kept_weights; }
  // Sequence b's weights after forward, as explain shows them: (H*T, T), row
  // h*T+i for query i of head h, each row summing to one ([PAD] keys 0).
  void weights(const AttentionCache<T>& cache, Index batch, Index seq, const std::uint8_t* key_valid, Index b,
               Ref<T> out) const;
  // Differentiates y = concat_h(softmax(q_h k_hᵀ/√D + mask) v_h) Woᵀ + bo and
  // q|k|v = x Wqkvᵀ + bqkv after forward with the same key_valid. Writes dx;
  // accumulates parameter gradients.
  void backward(const CRef<T>& x, const CRef<T>& dy, Index batch, Index seq, const std::uint8_t* key_valid,
                AttentionCache<T>& cache, Ref<T> dx) const;

  // The same with only the listed rows of x (B*T, C) as queries (ascending;
  // row r belongs to sequence r / T), which is all a last layer needs when
  // the loss reads those rows: a classifier's [CLS] rows, the masked-LM
  // head's chosen ones. Keys and values still come from every row of x; y is
  // (M, C), row i for query rows[i], equal to that row of forward's y up to
  // rounding. cache.probs is then (M*H, T). Not for tied projections.
  void forward_rows(const CRef<T>& x, Index seq, std::span<const std::int32_t> rows, const std::uint8_t* key_valid,
                    AttentionCache<T>& cache, Ref<T> y) const;
  // forward_rows's y for the [CLS] rows without keys or values, for inference: [CLS]'s score
  // against key t is q_h·(x_t Wk_hᵀ + bk_h) = (q_h Wk_h)·x_t plus a term that
  // is the same for every t (softmax ignores it), and its weighted values are
  // Σ_t p_t (x_t Wv_hᵀ + bv_h) = (Σ_t p_t x_t) Wv_hᵀ + bv_h since Σ_t p_t = 1.
  // Per sequence that is about 2·H·T·C + 2·C² multiply-adds instead of
  // 2·T·C². Equal to forward_rows's y up to rounding (the sums run in another
  // order); cache.folded then holds the folded queries and weighted inputs, and
  // nothing is kept for backward.
  void forward_cls_folded(const CRef<T>& x, Index batch, Index seq, const std::uint8_t* key_valid,
                          AttentionCache<T>& cache, Ref<T> y) const;
  // Differentiates forward_rows: dy (M, C) → dx (B*T, C); accumulates
  // parameter gradients.
  void backward_rows(const CRef<T>& x, const CRef<T>& dy, Index seq, std::span<const std::int32_t> rows,
                     AttentionCache<T>& cache, Ref<T> dx) const;
};

}  // namespace zibert
