// BERT for sequence classification, post-LN, as DESIGN §3 draws it. All
// parameters live in one flat buffer, gradients in another of equal length;
// layers hold views into both. Tensor names are Hugging Face's.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "zibert/model/batch.hpp"
#include "zibert/model/config.hpp"
#include "zibert/nn/attention.hpp"
#include "zibert/nn/layers.hpp"
#include "zibert/text/vocab.hpp"

namespace zibert {

// Which rows the last layer computes. A classifier's loss and logits depend
// on its [CLS] rows only, the masked-LM head's on the chosen positions', so
// training computes just those (needed; keys and values still from every
// token); attention maps (explain) and tests need every row (all).
enum class LastRows { needed, all };

// What a training pass keeps for backward, per encoder layer. rows is N, or
// M for a last layer that computes M listed rows only (ModelCache::last_rows).
template <class T>
struct EncoderLayerCache {
  AttentionCache<T> attn;
  DropoutMask drop1;      // (rows, C) on the attention output
  Buffer<T> ln1_xhat;     // (rows, C); backward recomputes LayerNorm 1's output from it
  Buffer<T> ln1_rstd;     // (rows, 1)
  Buffer<T> ff_pre;       // (rows, F) before GELU; backward recomputes GELU from it
  DropoutMask drop2;      // (rows, C) on the FFN output
  Buffer<T> ln2_xhat;     // (rows, C)
  Buffer<T> ln2_rstd;     // (rows, 1)
};

// What the masked-LM head keeps for backward, for M chosen positions.
template <class T>
struct MlmCache {
  Buffer<T> x;       // (M, C) the last layer's rows at the positions
  Buffer<T> pre;     // (M, C) transform before GELU
  Buffer<T> act;     // (M, C) after GELU
  Buffer<T> xhat;    // (M, C)
  Buffer<T> rstd;    // (M, 1)
  Buffer<T> h;       // (M, C) transform LayerNorm output
  Buffer<T> logits;  // (M, V)
  Buffer<T> probs;   // (M, V)
  Buffer<T> grad_logits;    // (M, V)
  Buffer<T> grad_h, grad_act, grad_x;  // (M, C)
};

// Everything a training pass (Bert::forward, Bert::forward_mlm) keeps for backward.
template <class T>
struct ModelCache {
  Index batch = 0, seq = 0;
  bool dropout_on = false;
  // The last layer computed the listed rows only (ascending rows b*T+t of
  // the batch: a classifier's [CLS] rows, the masked-LM head's chosen ones;
  // untied models), not all N. Its output then has last_rows.size() rows.
  bool rows_only = false;
  std::vector<std::int32_t> last_rows;
  std::vector<std::uint8_t> key_valid;  // (B*T)
  Buffer<T> emb_sum;    // (N, C) word + token type + position embedding
  Buffer<T> emb_xhat;   // (N, C)
  Buffer<T> emb_rstd;   // (N, 1)
  DropoutMask emb_drop;  // (N, C)
  DropoutMask sound_only;  // (N, 1): 0 where a token is read by its readings alone (rows == 0: none)
  std::vector<EncoderLayerCache<T>> layers;
  // Every layer's scratch, kept by none: backward needs neither the sums nor
  // the output projections, and recomputes LayerNorm 1's output from its
  // xhat and GELU(ff_pre) (at 768 wide, F = 3072 floats a token a layer less
  // to hold).
  Buffer<T> res;        // (rows, C) residual sums before each LayerNorm
  Buffer<T> ln1_out;    // (rows, C) LayerNorm 1's output
  Buffer<T> ff_act;     // (rows, F) after GELU
  Buffer<T> proj;       // (rows, C) an output projection before dropout: attention's, then the FFN's
  Buffer<T> hidden;     // ((L+1)*N, C) each layer's output, [0] = embeddings;
                        // with rows_only the last block's first M rows hold the listed rows
  Buffer<T> cls;        // (B, C) [CLS] rows of the last layer
  Buffer<T> pooled;     // (B, C) tanh(pooler)
  DropoutMask pool_drop;  // (B, C)
  Buffer<T> pooled_dropped;  // (B, C)
  Buffer<T> logits;     // (B, K)
  Buffer<T> probs;      // (B, K)
  // backward scratch
  Buffer<T> grad_a, grad_b, grad_c, grad_ff;  // (N, C), (N, C), (N, C), (N, F)
  Buffer<T> grad_in, grad_out;                // (N, C) a layer's dx and dy
  Buffer<T> grad_cls, grad_pooled, grad_logits;
  Buffer<T> ln_scratch;  // LayerNorm::backward's rows
  MlmCache<T> mlm;       // the masked-LM head's (forward_mlm)
};

// x = LayerNorm(word[ids] + reading[ids] + type[0] + pos[0..T)): the
// embeddings. Every input is one segment, so the token type row is 0's, as
// Hugging Face's token_type_ids default. reading[id] is the mean of the rows
// of the syllables the token is read as (0 when none, or without the channel).
template <class T>
struct Embeddings {
  Param<T> word;        // (V, C)
  Param<T> position;    // (max_len, C); unbound (value == nullptr) without position embeddings
  Param<T> token_type;  // (type_vocab_size, C); unbound without token types (zibert's own models)
  Param<T> reading;     // (S, C); unbound without the reading channel
  const TokenReadings* readings = nullptr;  // the config's, with `reading`
  LayerNorm<T> ln;
  // word[id] + reading[id] (C): a token's own vector, before type and position.
  void token(std::int32_t id, Eigen::Ref<Eigen::Matrix<T, 1, Eigen::Dynamic>> out) const;
  // ids (B*T) → sum (N, C) word + reading + position, y (N, C); xhat and rstd for backward.
  // sound_only (per token, may be null): a token whose byte is 0 leaves its
  // word row out of the sum (train --sound-only); training only.
  void forward(const Batch& batch, Ref<T> sum, Ref<T> y, Ref<T> xhat, Ref<T> rstd,
               const DropoutMask* sound_only = nullptr) const;
  // Differentiates y = LN(word[ids] + reading[ids] + type[0] + pos): accumulates into the
  // word, reading, token type and position gradients ([PAD] rows carry none). dsum is scratch (N, C).
  void backward(const Batch& batch, const CRef<T>& dy, const CRef<T>& xhat, const CRef<T>& rstd, Ref<T> dsum,
                Buffer<T>& scratch, const DropoutMask* sound_only = nullptr) const;
};

template <class T>
struct EncoderLayer {
  SelfAttention<T> attention;
  LayerNorm<T> ln1;
  Linear<T> up;    // (F, C)
  Linear<T> down;  // (C, F)
  LayerNorm<T> ln2;
};

// pooled = tanh([CLS] Wpᵀ + bp); logits = dropout(pooled) Wcᵀ + bc.
template <class T>
struct ClassifierHead {
  Linear<T> pooler;      // (C, C)
  Linear<T> classifier;  // (K, C)
};

// BertForMaskedLM's head on the chosen rows x (M, C):
// h = LN(GELU(x Wtᵀ + bt)); logits = h Eᵀ + b, with E the word embeddings
// (tied) or a decoder matrix of its own.
template <class T>
struct MlmHead {
  Linear<T> transform;  // (C, C)
  LayerNorm<T> ln;
  Param<T> bias;        // (V, 1) cls.predictions.bias
  Param<T> decoder;     // (V, C) the word embeddings' view when tied, else cls.predictions.decoder.weight
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

  // The training pass (DESIGN §3): embeddings, the encoder layers, the head.
  // With rng, dropout is applied; nullptr evaluates. Returns the mean loss
  // when the batch has labels, else 0; the (B, K) probabilities are in
  // cache.probs either way. Predicting goes through the inference fast path
  // (infer/fast_forward.hpp), which this pass holds to its results.
  T forward(const Batch& batch, ModelCache<T>& cache, const DropoutRng* rng, LastRows last = LastRows::needed) const;
  // Accumulates the gradient of the mean loss into grads(). Needs the cache of
  // the forward pass on the same labelled batch.
  void backward(const Batch& batch, ModelCache<T>& cache);

  // The masked-LM pass of an encoder (config().task == mlm): the encoder,
  // whose last layer computes the chosen positions' rows only (keys and
  // values from every row; every row when queries and keys are tied, or
  // with LastRows::all), then the head on those M rows, never all N. Returns
  // the mean cross-entropy over the positions when targets are given, else
  // 0; the (M, V) probabilities are in cache.mlm.probs.
  T forward_mlm(const MaskedBatch& batch, ModelCache<T>& cache, const DropoutRng* rng,
                LastRows last = LastRows::needed) const;
  // Accumulates the gradient of that loss into grads(); the tied decoder's
  // adds into the word embeddings'.
  void backward_mlm(const MaskedBatch& batch, ModelCache<T>& cache);

  const ModelConfig& config() const { return config_; }
  const std::vector<TensorInfo>& layout() const { return layout_; }
  AlignedVector<T>& params() { return params_; }
  const AlignedVector<T>& params() const { return params_; }
  AlignedVector<T>& grads() { return grads_; }
  void zero_grad();
  const TensorInfo& tensor(const std::string& name) const;

  // The layers, as views of the parameters (for the inference fast path).
  const Embeddings<T>& embeddings() const { return embeddings_; }
  const std::vector<EncoderLayer<T>>& layers() const { return layers_; }
  const ClassifierHead<T>& head() const { return head_; }     // classify
  const MlmHead<T>& mlm_head() const { return mlm_; }         // mlm
  const T* values() const { return shared_ ? shared_ : params_.data(); }  // the parameters read

 private:
  void bind();
  Param<T> param(const std::string& name);
  void check_task(Task task, const char* pass) const;
  // Embeddings and encoder layers: cache.hidden. With rows_only the last
  // layer computes the rows listed in cache.last_rows only.
  void encode(const Batch& batch, bool rows_only, const DropoutRng* rng, ModelCache<T>& cache) const;
  // Differentiates encode from cache.grad_out, the gradient of the last
  // layer's output (its M listed rows when rows_only, else all N).
  void encode_backward(const Batch& batch, ModelCache<T>& cache);
  // One encoder layer: x (N, C) → y (rows, C); rows = M for the listed
  // query rows (ascending), else N (query_rows == nullptr). l and the rows' place
  // in the batch give its dropout masks.
  void layer_forward(Index l, const CRef<T>& x, const Batch& batch, const std::vector<std::int32_t>* query_rows,
                     const DropoutRng* rng, ModelCache<T>& cache, Ref<T> y) const;
  // Differentiates layer_forward: dy (rows, C) → cache.grad_in (N, C).
  void layer_backward(Index l, const CRef<T>& x, const std::vector<std::int32_t>* query_rows,
                      ModelCache<T>& cache) const;
  // The head on the last layer's output: probabilities, and the loss when labelled.
  T head_forward(const Batch& batch, const DropoutRng* rng, ModelCache<T>& cache) const;
  // Differentiates head_forward: cache.grad_cls (B, C) from the loss.
  void head_backward(const Batch& batch, ModelCache<T>& cache) const;

  ModelConfig config_;
  std::vector<TensorInfo> layout_;
  AlignedVector<T> params_;  // flat, layout_ order
  AlignedVector<T> grads_;   // same length
  const T* shared_ = nullptr;  // a replica's source parameters (params_ is then empty)
  Embeddings<T> embeddings_;
  std::vector<EncoderLayer<T>> layers_;
  ClassifierHead<T> head_;
  MlmHead<T> mlm_;
};

// A classifier's logits (B, K) in place → its probabilities: one softmax
// over each row, or one sigmoid per label for a multi-label model.
template <class T>
void label_probabilities(const ModelConfig& config, Ref<T> logits);

// Copies every encoder tensor (bert.embeddings.*, bert.encoder.*) of from
// into to, and the pooler when both have one; to's heads stay as they are:
// fine-tuning from an encoder, or pretraining from a classifier. The shapes
// must agree (throws Error).
template <class T>
void copy_encoder_weights(const Bert<T>& from, Bert<T>& to);
// Every tensor of `to` (its encoder's only, when encoder_only) from the tensor
// of that name in `from`. The word embeddings of `to` may have more rows
// (train --extend-vocab), and so may its reading embeddings: from's rows come
// first, and the rows past them keep to's values (initialised as for
// training). A reading channel `from` lacks starts at zero.
template <class T>
void copy_weights(const Bert<T>& from, Bert<T>& to, bool encoder_only);

}  // namespace zibert
