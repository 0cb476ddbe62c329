// BERT for sequence classification, post-LN, as DESIGN §3 draws it. All
// parameters live in one flat buffer, gradients in another of equal length;
// layers hold views into both. Tensor names are Hugging Face's.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "zibert/model/batch.hpp"
#include "zibert/model/config.hpp"
#include "zibert/nn/attention.hpp"
#include "zibert/nn/layers.hpp"
#include "zibert/text/vocab.hpp"

namespace zibert {

template <class T>
struct EncoderLayerCache {
  AttentionCache<T> attn;
  Buffer<T> attn_out;     // (N, C) attention output before dropout
  Buffer<T> drop1;        // (N, C) dropout mask on the attention output
  Buffer<T> res;          // (N, C) residual sums before each LayerNorm
  Buffer<T> ln1_xhat;     // (N, C)
  Buffer<T> ln1_rstd;     // (N, 1)
  Buffer<T> hidden;       // (N, C) LayerNorm 1 output
  Buffer<T> ff_pre;       // (N, F) before GELU
  Buffer<T> ff_act;       // (N, F) after GELU
  Buffer<T> ff_out;       // (N, C) second projection before dropout
  Buffer<T> drop2;        // (N, C)
  Buffer<T> ln2_xhat;     // (N, C)
  Buffer<T> ln2_rstd;     // (N, 1)
};

template <class T>
struct ModelCache {
  // The loss and the logits depend on the last layer's [CLS] rows only, so by
  // default the last layer computes just those (keys and values still from
  // every token). all_rows computes every row, for attention maps (explain).
  bool all_rows = false;
  Index batch = 0, seq = 0;
  bool dropout_on = false;
  bool cls_only = false;  // how the last forward pass ran
  bool inference = false; // the last forward pass kept nothing backward needs
  std::vector<std::uint8_t> key_valid;  // (B*T)
  Buffer<T> emb_sum;    // (N, C) word + position embedding
  Buffer<T> emb_xhat;   // (N, C)
  Buffer<T> emb_rstd;   // (N, 1)
  Buffer<T> emb_drop;   // (N, C)
  std::vector<EncoderLayerCache<T>> layers;
  Buffer<T> hidden;     // ((L+1)*N, C) each layer's output, [0] = embeddings;
                        // with cls_only the last block's first B rows hold the [CLS] rows
  Buffer<T> cls;        // (B, C) [CLS] rows of the last layer
  Buffer<T> pooled;     // (B, C) tanh(pooler)
  Buffer<T> pool_drop;  // (B, C)
  Buffer<T> pooled_dropped;  // (B, C)
  Buffer<T> logits;     // (B, K)
  Buffer<T> probs;      // (B, K)
  Buffer<T> predictions;  // (B, K) predict's result
  // backward scratch
  Buffer<T> grad_a, grad_b, grad_c, grad_ff;  // (N, C), (N, C), (N, C), (N, F)
  Buffer<T> grad_in, grad_out;                // (N, C) a layer's dx and dy
  Buffer<T> grad_cls, grad_pooled, grad_logits;
};

template <class T>
struct EncoderLayer {
  SelfAttention<T> attention;
  LayerNorm<T> ln1;
  Linear<T> up;    // (F, C)
  Linear<T> down;  // (C, F)
  LayerNorm<T> ln2;
};

// The first layer's query, key and value projections of the embedding
// LayerNorm's output, tabulated. LayerNorm centres and scales each row: with
// x = w + p (word and position embedding), y = γ⊙(x − mean x)·r + β,
// r = 1/sqrt(var x + ε), so with A = Wqkv·diag(γ)
//   Wqkv y + b = r · (A(w − mean w) + A(p − mean p)) + (Wqkv β + b),
// as mean x = mean w + mean p. The two products are the same for every text:
// A(p − mean p) is computed for every position up front, A(w − mean w) for a
// vocabulary entry the first time it is needed (Bert::tabulate), and an
// inference pass gathers them per token instead of multiplying out.
template <class T>
struct EmbeddingTables {
  const T* weights = nullptr;         // the parameters they are computed from
  Index width = 0;                    // W: 3C, or 2C with tied projections
  std::unique_ptr<T[]> word;          // (vocab, W): A(w − mean w), row v valid once filled[v]
  std::vector<std::uint8_t> filled;   // (vocab)
  AlignedVector<T> pos;               // (max_len, W): A(p − mean p); empty without positions
  AlignedVector<T> bias;              // (W): Wqkv β + b
  MatR<T> a;                          // (W, C): A, for the rows still to come
};

template <class T>
class Bert {
 public:
  // trainable = false leaves out the gradient buffer (inference only;
  // backward() then throws).
  explicit Bert(const ModelConfig& config, bool trainable = true);
  // Copies rebind the views to their own buffers; moves keep the heap buffers,
  // so the views stay valid.
  Bert(const Bert& other);
  Bert& operator=(const Bert& other);
  Bert(Bert&&) noexcept = default;
  Bert& operator=(Bert&&) noexcept = default;

  // A replica for data-parallel work: it reads source's parameters in place
  // (source must outlive it and keep its buffer) and has gradients of its own.
  static Bert replica(const Bert& source);

  // N(0, 0.02) matrices, zero biases, LayerNorm γ = 1, β = 0.
  void init_weights(std::uint64_t seed);

  // Runs the model; returns the mean loss when the batch has labels, else 0.
  // With rng (training) dropout is applied; nullptr means evaluation.
  // inference skips what only backward needs (residual sums, LayerNorm's
  // xhat and rstd, GELU's input, the attention weights unless
  // cache.all_rows; the last layer's keys and values), which backward then
  // refuses; the outputs are the same up to rounding. An inference pass
  // given tables (of this model's current weights) gathers the first
  // layer's projections from them.
  T forward(const Batch& batch, ModelCache<T>& cache, const DropoutRng* rng, bool inference = false,
            const EmbeddingTables<T>* tables = nullptr) const;
  // Accumulates the gradient of the mean loss into grads(). Needs the cache of
  // the forward pass on the same batch.
  void backward(const Batch& batch, ModelCache<T>& cache);
  // Returns the (B, K) class probabilities (in cache.predictions). The batch
  // runs in groups of about kPredictRows token rows (whole when
  // cache.all_rows), so the cache holds the forward pass of the last group
  // only, unless the batch was one group.
  CMatMap<T> predict(const Batch& batch, ModelCache<T>& cache, const EmbeddingTables<T>* tables = nullptr) const;
  static constexpr Index kPredictRows = 512;

  // EmbeddingTables for the weights as they are now, with the positions'
  // rows and of the vocabulary only [PAD]'s; nullptr when all their rows would
  // take more than max_bytes. Inference passes given them gather the first
  // layer's projections (equal to multiplying out up to rounding).
  std::unique_ptr<EmbeddingTables<T>> embedding_tables(std::size_t max_bytes = kMaxTableBytes) const;
  // Fills the rows of the vocabulary entries among ids[0, n) that tables
  // lacks (C·W multiply-adds each, as much as one token's projection). A
  // row gets the same value whenever, and with whichever others, it is
  // computed, so what a text is predicted does not depend on what came before.
  void tabulate(EmbeddingTables<T>& tables, const std::int32_t* ids, std::size_t n) const;
  static constexpr std::size_t kMaxTableBytes = std::size_t(256) << 20;

  const ModelConfig& config() const { return config_; }
  const std::vector<TensorInfo>& layout() const { return layout_; }
  AlignedVector<T>& params() { return params_; }
  const AlignedVector<T>& params() const { return params_; }
  AlignedVector<T>& grads() { return grads_; }
  void zero_grad();
  const TensorInfo& tensor(const std::string& name) const;

 private:
  void bind();
  Param<T> param(const std::string& name);
  const T* values() const { return shared_ ? shared_ : params_.data(); }  // the parameters read
  void check_tables(const EmbeddingTables<T>& tables) const;

  ModelConfig config_;
  std::vector<TensorInfo> layout_;
  AlignedVector<T> params_;  // flat, layout_ order
  AlignedVector<T> grads_;   // same length
  const T* shared_ = nullptr;  // a replica's source parameters (params_ is then empty)
  Param<T> word_emb_, pos_emb_;
  LayerNorm<T> emb_ln_;
  std::vector<EncoderLayer<T>> layers_;
  Linear<T> pooler_, classifier_;
};

}  // namespace zibert
