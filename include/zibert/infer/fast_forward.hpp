// The inference fast path: Bert's forward for predicting, kept apart from the
// training pass (model/bert.cpp) as llm.c keeps its kernels apart from
// train_gpt2.c, and held to it by equality tests. It keeps nothing backward
// needs, and:
//  - gathers the first layer's Q/K/V rows from EmbeddingTables, when given;
//  - folds the last layer's [CLS] attention (SelfAttention::forward_cls_folded:
//    no keys or values), unless queries and keys are tied;
//  - fuses each residual sum into its LayerNorm (LayerNorm::forward_sum);
//  - leaves attention weights unnormalised and divides after the product;
//  - applies GELU in place.
// Its probabilities equal the training pass's up to rounding, and a
// sequence's do not depend on which others share its batch.
//
// Its Linear products go through a LinearProducts: the float weights
// (float_products), or a quantized model's int8 twins (infer/int8_net.hpp).
// Attention's q·k and p·v, the [CLS]-folded last layer and the first
// layer's tables stay float either way.
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

#include "zibert/infer/embedding_tables.hpp"
#include "zibert/model/bert.hpp"

namespace zibert {

// What an inference pass works in, per encoder layer. rows is N, or B for a
// folded last layer.
template <class T>
struct InferenceLayerCache {
  AttentionCache<T> attn;
  Buffer<T> attn_out;  // (rows, C) attention output
  Buffer<T> hidden;    // (rows, C) LayerNorm 1 output
  Buffer<T> ff;        // (rows, F) the FFN's activations, GELU in place
  Buffer<T> ff_out;    // (rows, C) second projection
};

template <class T>
struct InferenceCache {
  std::vector<std::uint8_t> key_valid;  // (B*T)
  Buffer<T> emb_sum;   // (N, C) word + position embedding
  Buffer<T> emb_xhat;  // (N, C)
  Buffer<T> emb_rstd;  // (N, 1) what the tables scale by
  std::vector<InferenceLayerCache<T>> layers;
  Buffer<T> hidden;    // ((L+1)*N, C) each layer's output, [0] = embeddings; with a folded
                       // last layer the last block's first B rows hold the [CLS] rows
  Buffer<T> cls;       // (B, C)
  Buffer<T> pooled;    // (B, C)
  Buffer<T> logits;    // (B, K)
  Buffer<T> probs;     // (B, K)
};

// How an inference pass multiplies a Linear's input by its weight.
template <class T>
struct LinearProducts {
  virtual ~LinearProducts() = default;
  // y (N, out) = x (N, in) Wᵀ + b, by the float weights.
  virtual void apply(const Linear<T>& lin, const CRef<T>& x, Ref<T> y) const { lin.forward(x, y); }
};
template <class T>
const LinearProducts<T>& float_products();
// Every Linear of the network, in layout order: what a LinearProducts twin
// (Int8Net, Bf16Net) replaces.
template <class T>
std::vector<const Linear<T>*> network_linears(const Bert<T>& net);

// Token rows per inference pass that keep one step's activations in a core's
// L2 cache: the predictor cuts its batches to about this many.
inline constexpr Index kPredictRows = 512;

// The (B, K) class probabilities of an unlabelled batch (in cache.probs).
// tables: net's EmbeddingTables (see embedding_tables.hpp), or nullptr to
// multiply out the first layer's projections.
template <class T>
CMatMap<T> infer_forward(const Bert<T>& net, const Batch& batch, InferenceCache<T>& cache,
                         const EmbeddingTables<T>* tables = nullptr,
                         const LinearProducts<T>& products = float_products<T>());

// Every token's last-layer state (N, C) of an unlabelled batch, nothing
// folded (embed's input). Rows of [PAD] are computed but mean nothing.
template <class T>
CMatMap<T> infer_hidden(const Bert<T>& net, const Batch& batch, InferenceCache<T>& cache,
                        const EmbeddingTables<T>* tables = nullptr,
                        const LinearProducts<T>& products = float_products<T>());

// Runs run(b, cache) for b in [0, n_batches), spread over the threads, each
// thread with a cache of its own; the first exception is rethrown.
template <class T>
void for_each_batch(std::size_t n_batches, std::vector<InferenceCache<T>>& caches,
                    const std::function<void(std::size_t, InferenceCache<T>&)>& run);

// Runs infer_forward on each batch, the batches spread over the threads (each
// with a cache of its own), and hands every batch's (B, K) probabilities to
// take, which may be called from any thread but never twice at once for one
// index.
template <class T>
void predict_batches(const Bert<T>& net, const std::vector<Batch>& batches, std::vector<InferenceCache<T>>& caches,
                     const std::function<void(std::size_t, const CMatMap<T>&)>& take,
                     const EmbeddingTables<T>* tables = nullptr,
                     const LinearProducts<T>& products = float_products<T>());

}  // namespace zibert
