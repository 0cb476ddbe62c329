#include "zibert/model/bert.hpp"

#include <algorithm>
#include <cmath>

#include "zibert/base/error.hpp"
#include "zibert/base/random.hpp"

namespace zibert {

template <class T>
Bert<T>::Bert(const ModelConfig& config, bool trainable) : config_(config), layout_(parameter_layout(config)) {
  config_.validate();
  const TensorInfo& last = layout_.back();
  params_.assign(last.offset + last.size, T(0));
  if (trainable) grads_.assign(params_.size(), T(0));
  bind();
}

template <class T>
Bert<T>::Bert(const Bert& other)
    : config_(other.config_),
      layout_(other.layout_),
      params_(other.params_),
      grads_(other.grads_),
      shared_(other.shared_) {
  bind();
}

template <class T>
Bert<T> Bert<T>::replica(const Bert& source) {
  Bert r(source.config_, false);
  r.params_.clear();
  r.params_.shrink_to_fit();
  r.shared_ = source.params_.data();
  r.grads_.assign(source.params_.size(), T(0));
  r.bind();
  return r;
}

template <class T>
Bert<T>& Bert<T>::operator=(const Bert& other) {
  config_ = other.config_;
  layout_ = other.layout_;
  params_ = other.params_;
  grads_ = other.grads_;
  shared_ = other.shared_;
  bind();
  return *this;
}

template <class T>
const TensorInfo& Bert<T>::tensor(const std::string& name) const {
  for (const auto& t : layout_)
    if (t.name == name) return t;
  throw Error("model has no tensor " + name);
}

template <class T>
Param<T> Bert<T>::param(const std::string& name) {
  const TensorInfo& t = tensor(name);
  Index rows = t.shape[0], cols = t.shape.size() == 2 ? t.shape[1] : 1;
  return Param<T>{const_cast<T*>(values()) + t.offset, grads_.empty() ? nullptr : grads_.data() + t.offset, rows, cols};
}

template <class T>
void Bert<T>::bind() {
  const Index c = config_.dim;
  embeddings_.word = param("bert.embeddings.word_embeddings.weight");
  embeddings_.position = config_.position ? param("bert.embeddings.position_embeddings.weight") : Param<T>{};
  embeddings_.token_type =
      config_.type_vocab_size > 0 ? param("bert.embeddings.token_type_embeddings.weight") : Param<T>{};
  embeddings_.reading = config_.readings ? param("bert.embeddings.reading_embeddings.weight") : Param<T>{};
  embeddings_.readings = config_.readings.get();
  embeddings_.ln = {param("bert.embeddings.LayerNorm.weight"), param("bert.embeddings.LayerNorm.bias"),
                    T(config_.layer_norm_eps)};
  layers_.assign(config_.layers, {});
  for (std::int64_t l = 0; l < config_.layers; ++l) {
    const std::string p = "bert.encoder.layer." + std::to_string(l) + ".";
    EncoderLayer<T>& layer = layers_[l];
    // query, key and value (or query and value when tied) are contiguous
    const Index projections = config_.tie_qk ? 2 : 3;
    Param<T> qkv_w = param(p + "attention.self.query.weight");
    qkv_w.rows = projections * c;
    Param<T> qkv_b = param(p + "attention.self.query.bias");
    qkv_b.rows = projections * c;
    layer.attention.qkv = {qkv_w, qkv_b};
    layer.attention.output = {param(p + "attention.output.dense.weight"), param(p + "attention.output.dense.bias")};
    layer.attention.heads = config_.heads;
    layer.attention.tied = config_.tie_qk;
    layer.ln1 = {param(p + "attention.output.LayerNorm.weight"), param(p + "attention.output.LayerNorm.bias"),
                 T(config_.layer_norm_eps)};
    layer.up = {param(p + "intermediate.dense.weight"), param(p + "intermediate.dense.bias")};
    layer.down = {param(p + "output.dense.weight"), param(p + "output.dense.bias")};
    layer.ln2 = {param(p + "output.LayerNorm.weight"), param(p + "output.LayerNorm.bias"), T(config_.layer_norm_eps)};
  }
  if (config_.task == Task::classify) {
    head_.pooler = {param("bert.pooler.dense.weight"), param("bert.pooler.dense.bias")};
    head_.classifier = {param("classifier.weight"), param("classifier.bias")};
  } else {
    const std::string p = "cls.predictions.";
    mlm_.transform = {param(p + "transform.dense.weight"), param(p + "transform.dense.bias")};
    mlm_.ln = {param(p + "transform.LayerNorm.weight"), param(p + "transform.LayerNorm.bias"),
               T(config_.layer_norm_eps)};
    mlm_.bias = param(p + "bias");
    mlm_.decoder = config_.tie_decoder ? embeddings_.word : param(p + "decoder.weight");
  }
}

template <class T>
void Bert<T>::check_task(Task task, const char* pass) const {
  if (config_.task != task)
    throw Error(std::string(pass) + " needs " + (task == Task::mlm ? "an encoder (zibert pretrain's model)" : "a classifier") +
                "; this model is " + (config_.task == Task::mlm ? "an encoder" : "a classifier"));
}

template <class T>
void Bert<T>::zero_grad() {
  std::fill(grads_.begin(), grads_.end(), T(0));
}

template <class T>
void Bert<T>::init_weights(std::uint64_t seed) {
  Rng rng(seed);  // Box–Muller on the portable stream
  for (const TensorInfo& t : layout_) {
    T* p = params_.data() + t.offset;
    bool is_ln_gamma = t.name.ends_with("LayerNorm.weight");
    for (std::size_t i = 0; i < t.size; ++i) {
      if (t.decay) {
        double u1 = rng.uniform(), u2 = rng.uniform();
        p[i] = T(0.02 * std::sqrt(-2.0 * std::log(1.0 - u1)) * std::cos(6.283185307179586 * u2));
      } else {
        p[i] = is_ln_gamma ? T(1) : T(0);
      }
    }
  }
  // Hugging Face keeps the [PAD] embedding at zero.
  embeddings_.word.w().row(0).setZero();
}

// ---- embeddings: x = LayerNorm(word[ids] + reading[ids] + type[0] + pos[0..T)), summed in Hugging Face's order

template <class T>
void Embeddings<T>::token(std::int32_t id, Eigen::Ref<Eigen::Matrix<T, 1, Eigen::Dynamic>> out) const {
  if (id < 0 || id >= word.rows) throw Error("token id out of range");
  out = word.w().row(id);
  if (!reading.value) return;
  const std::vector<std::int32_t>& rows = readings->of_token[id];
  if (rows.empty()) return;
  const T share = T(1) / T(rows.size());
  for (std::int32_t r : rows) out += share * reading.w().row(r);
}

template <class T>
void Embeddings<T>::forward(const Batch& batch, Ref<T> sum, Ref<T> y, Ref<T> xhat, Ref<T> rstd,
                            const DropoutMask* sound_only) const {
  const Index n = batch.size * batch.seq;
  for (Index i = 0; i < n; ++i) {
    token(batch.ids[i], sum.row(i));
    // A sound-only token: its word row taken back out (subtracted rather than
    // never added, the arithmetic the shipped detector was trained with).
    if (sound_only && !sound_only->keep[std::size_t(i)]) sum.row(i) -= word.w().row(batch.ids[i]);
    if (token_type.value) sum.row(i) += token_type.w().row(0);
    if (position.value) sum.row(i) += position.w().row(i % batch.seq);
  }
  ln.forward(sum, y, xhat, rstd);
}

template <class T>
void Embeddings<T>::backward(const Batch& batch, const CRef<T>& dy, const CRef<T>& xhat, const CRef<T>& rstd,
                             Ref<T> dsum, Buffer<T>& scratch, const DropoutMask* sound_only) const {
  ln.backward(dy, xhat, rstd, dsum, scratch);
  const Index n = batch.size * batch.seq;
  MatMap<T> dword = word.g();
  for (Index i = 0; i < n; ++i) {
    if (batch.ids[i] == kPadId) continue;  // [PAD] rows carry no gradient
    if (!sound_only || sound_only->keep[std::size_t(i)]) dword.row(batch.ids[i]) += dsum.row(i);
    if (reading.value) {
      const std::vector<std::int32_t>& rows = readings->of_token[batch.ids[i]];
      const T share = rows.empty() ? T(0) : T(1) / T(rows.size());
      for (std::int32_t r : rows) reading.g().row(r) += share * dsum.row(i);
    }
    if (token_type.value) token_type.g().row(0) += dsum.row(i);
    if (position.value) position.g().row(i % batch.seq) += dsum.row(i);
  }
}

// ---- one encoder layer (post-LN):
//   a = attention(x);  h = LN1(x + dropout(a Woᵀ + bo));  y = LN2(h + dropout(GELU(h W1ᵀ + b1) W2ᵀ + b2))

template <class T>
void Bert<T>::layer_forward(Index l, const CRef<T>& x, const Batch& batch, const std::vector<std::int32_t>* query_rows,
                            const DropoutRng* rng, ModelCache<T>& cache, Ref<T> y) const {
  const EncoderLayer<T>& layer = layers_[l];
  EncoderLayerCache<T>& lc = cache.layers[l];
  const Index b_size = batch.size, seq = batch.seq, c = config_.dim, f = config_.ffn;
  const Index rows = query_rows ? static_cast<Index>(query_rows->size()) : b_size * seq;
  // Dropout masks are those of the same rows in the full (N, C) matrices.
  const auto first_row = static_cast<std::uint64_t>(batch.first * seq);
  auto drop = [&](std::uint64_t site, DropoutMask& mask, MatMap<T> x) {
    if (query_rows)
      dropout_mask(*rng, site, c, mask, first_row, *query_rows);
    else
      dropout_mask(*rng, site, rows, c, mask, first_row);
    mask.apply(x);
  };
  MatMap<T> a = cache.proj.view(rows, c);  // (rows, C)
  if (query_rows)
    layer.attention.forward_rows(x, seq, *query_rows, cache.key_valid.data(), lc.attn, a);
  else
    layer.attention.forward(x, b_size, seq, cache.key_valid.data(), lc.attn, a);
  if (rng) drop(1 + 2 * l, lc.drop1, a);
  // The residual: x, or its listed rows (forward_rows gathered them).
  const CMatMap<T> skip(query_rows ? lc.attn.xq.data.data() : x.data(), rows, c);
  MatMap<T> res = cache.res.view(rows, c);  // (rows, C)
  res = skip + a;
  MatMap<T> hid = cache.ln1_out.view(rows, c);  // (rows, C)
  layer.ln1.forward(res, hid, lc.ln1_xhat.view(rows, c), lc.ln1_rstd.view(rows, 1));
  MatMap<T> pre = lc.ff_pre.view(rows, f), act = cache.ff_act.view(rows, f);  // (rows, F)
  MatMap<T> out = cache.proj.view(rows, c);                                  // (rows, C)
  layer.up.forward(hid, pre);
  gelu_forward<T>(pre, act);
  layer.down.forward(act, out);
  if (rng) drop(2 + 2 * l, lc.drop2, out);
  res = hid + out;
  layer.ln2.forward(res, y, lc.ln2_xhat.view(rows, c), lc.ln2_rstd.view(rows, 1));
}

template <class T>
void Bert<T>::layer_backward(Index l, const CRef<T>& x, const std::vector<std::int32_t>* query_rows,
                             ModelCache<T>& cache) const {
  const EncoderLayer<T>& layer = layers_[l];
  EncoderLayerCache<T>& lc = cache.layers[l];
  const Index b_size = cache.batch, seq = cache.seq, n = b_size * seq, c = config_.dim, f = config_.ffn;
  const Index rows = query_rows ? static_cast<Index>(query_rows->size()) : n;
  const bool drop = cache.dropout_on;
  MatMap<T> dy(cache.grad_out.data.data(), rows, c);  // (rows, C)
  MatMap<T> dx = cache.grad_in.view(n, c);            // (N, C)
  MatMap<T> da = cache.grad_a.view(rows, c), db = cache.grad_b.view(rows, c), dc = cache.grad_c.view(rows, c);
  MatMap<T> dff = cache.grad_ff.view(rows, f);        // (rows, F)
  // y = LN2(hid + dropout(down(GELU(up(hid)))))
  layer.ln2.backward(dy, MatMap<T>(lc.ln2_xhat.data.data(), rows, c), MatMap<T>(lc.ln2_rstd.data.data(), rows, 1),
                     da, cache.ln_scratch);
  db = da;  // the residual path into hid
  dc = da;
  if (drop) lc.drop2.apply(dc);
  Ref<T> dff_ref(dff);
  MatMap<T> pre(lc.ff_pre.data.data(), rows, f), act = cache.ff_act.view(rows, f);
  gelu_forward<T>(pre, act);  // recomputed: the forward pass did not keep it
  layer.down.backward(act, dc, &dff_ref);
  gelu_backward<T>(pre, dff, dff);
  Ref<T> db_ref(db);
  MatMap<T> hid = cache.ln1_out.view(rows, c);  // (rows, C) recomputed: the forward pass did not keep it
  layer.ln1.scale(MatMap<T>(lc.ln1_xhat.data.data(), rows, c), hid);
  layer.up.backward(hid, dff, &db_ref, true);
  // hid = LN1(x + dropout(attention(x)))
  layer.ln1.backward(db, MatMap<T>(lc.ln1_xhat.data.data(), rows, c), MatMap<T>(lc.ln1_rstd.data.data(), rows, 1),
                     da, cache.ln_scratch);
  dc = da;
  if (drop) lc.drop1.apply(dc);
  if (query_rows) {
    MatMap<T> dx_attn = cache.grad_b.view(n, c);
    layer.attention.backward_rows(x, dc, seq, *query_rows, lc.attn, dx_attn);
    dx = dx_attn;
    for (Index i = 0; i < rows; ++i) dx.row((*query_rows)[i]) += da.row(i);  // the residual into the listed rows
  } else {
    layer.attention.backward(x, dc, b_size, seq, cache.key_valid.data(), lc.attn, db);
    dx = da + db;
  }
}

// ---- the head: pooled = tanh([CLS] Wpᵀ + bp); logits = dropout(pooled) Wcᵀ + bc; loss = CE

template <class T>
T Bert<T>::head_forward(const Batch& batch, const DropoutRng* rng, ModelCache<T>& cache) const {
  const Index b_size = batch.size, n = b_size * batch.seq, c = config_.dim;
  MatMap<T> cls = cache.cls.view(b_size, c);  // (B, C)
  const MatMap<T> last(cache.hidden.data.data() + config_.layers * n * c, n, c);
  for (Index b = 0; b < b_size; ++b) cls.row(b) = last.row(cache.rows_only ? b : b * batch.seq);  // [CLS] rows
  MatMap<T> pooled = cache.pooled.view(b_size, c);  // (B, C)
  head_.pooler.forward(cls, pooled);
  pooled = pooled.array().tanh().matrix();
  MatMap<T> pooled_dropped = cache.pooled_dropped.view(b_size, c);  // (B, C)
  pooled_dropped = pooled;
  if (rng) {
    dropout_mask(*rng, 1000, b_size, c, cache.pool_drop, batch.first);
    cache.pool_drop.apply(pooled_dropped);
  }
  MatMap<T> logits = cache.logits.view(b_size, config_.labels);  // (B, K)
  head_.classifier.forward(pooled_dropped, logits);
  MatMap<T> probs = cache.probs.view(b_size, config_.labels);  // (B, K)
  if (config_.multi_label) {  // one sigmoid per label, binary cross-entropy
    if (batch.targets.empty()) {
      probs = logits;
      label_probabilities<T>(config_, probs);
      return T(0);
    }
    if (batch.targets.size() != static_cast<std::size_t>(b_size * config_.labels))
      throw Error("a multi-label batch needs B×K targets");
    return binary_cross_entropy_forward<T>(logits, batch.targets.data(), probs);
  }
  if (batch.labels.empty()) {  // one softmax over the labels, cross-entropy
    probs = logits;
    label_probabilities<T>(config_, probs);
    return T(0);
  }
  if (!batch.soft.probs.empty()) {  // distillation: the teacher's distribution, and gold labels where known
    for (std::int32_t label : batch.labels)
      if ((label < 0 && label != kNoGold) || label >= config_.labels) throw Error("label id out of range");
    return distillation_forward<T>(logits, batch.soft, batch.labels.data(), probs);
  }
  for (std::int32_t label : batch.labels)
    if ((label < 0 && label != kNoLabel) || label >= config_.labels) throw Error("label id out of range");
  return cross_entropy_forward<T>(logits, batch.labels.data(), probs, batch.label_smoothing);
}

template <class T>
void Bert<T>::head_backward(const Batch& batch, ModelCache<T>& cache) const {
  const Index b_size = cache.batch, c = config_.dim;
  MatMap<T> probs(cache.probs.data.data(), b_size, config_.labels);
  MatMap<T> dlogits = cache.grad_logits.view(b_size, config_.labels);  // (B, K)
  if (config_.multi_label)
    binary_cross_entropy_backward<T>(probs, batch.targets.data(), dlogits);
  else if (!batch.soft.probs.empty())
    distillation_backward<T>(MatMap<T>(cache.logits.data.data(), b_size, config_.labels), batch.soft,
                             batch.labels.data(), probs, dlogits);
  else
    cross_entropy_backward<T>(probs, batch.labels.data(), dlogits, batch.label_smoothing);
  MatMap<T> dpooled = cache.grad_pooled.view(b_size, c);  // (B, C)
  Ref<T> dpooled_ref(dpooled);
  head_.classifier.backward(MatMap<T>(cache.pooled_dropped.data.data(), b_size, c), dlogits, &dpooled_ref);
  if (cache.dropout_on) cache.pool_drop.apply(dpooled);
  MatMap<T> pooled(cache.pooled.data.data(), b_size, c);
  dpooled.array() *= (T(1) - pooled.array().square());
  MatMap<T> dcls = cache.grad_cls.view(b_size, c);  // (B, C)
  Ref<T> dcls_ref(dcls);
  head_.pooler.backward(MatMap<T>(cache.cls.data.data(), b_size, c), dpooled, &dcls_ref);
}

// ---- the whole model

// The dropout sites: 0 the embeddings, 1 + 2l and 2 + 2l layer l's, 1000 the
// pooler's; this one draws the sound-only tokens.
inline constexpr std::uint64_t kSoundOnlySite = 2000;

template <class T>
void Bert<T>::encode(const Batch& batch, bool rows_only, const DropoutRng* rng, ModelCache<T>& cache) const {
  const Index n = batch.size * batch.seq, c = config_.dim, n_layers = config_.layers;
  if (batch.seq > config_.max_len) throw Error("batch sequence length exceeds the model's max_len");
  cache.batch = batch.size;
  cache.seq = batch.seq;
  cache.dropout_on = rng != nullptr;
  cache.rows_only = rows_only;
  cache.layers.resize(n_layers);
  cache.key_valid.resize(n);
  for (Index i = 0; i < n; ++i) cache.key_valid[i] = batch.ids[i] != kPadId;

  MatMap<T> hidden = cache.hidden.view((n_layers + 1) * n, c);  // ((L+1)*N, C)
  auto h0 = hidden.middleRows(0, n);                           // (N, C)
  // Sound-only tokens: only characters with readings, never the specials.
  cache.sound_only.rows = 0;
  if (rng && rng->sound_only > 0 && embeddings_.reading.value) {
    dropout_mask(DropoutRng{rng->seed, rng->step, rng->sound_only}, kSoundOnlySite, n, 1, cache.sound_only,
                 batch.first * batch.seq);
    for (Index i = 0; i < n; ++i)
      if (embeddings_.readings->of_token[batch.ids[i]].empty()) cache.sound_only.keep[std::size_t(i)] = 1;
  }
  const DropoutMask* sound_only = cache.sound_only.rows ? &cache.sound_only : nullptr;
  embeddings_.forward(batch, cache.emb_sum.view(n, c), h0, cache.emb_xhat.view(n, c), cache.emb_rstd.view(n, 1),
                      sound_only);
  if (rng) {
    dropout_mask(*rng, 0, n, c, cache.emb_drop, batch.first * batch.seq);
    cache.emb_drop.apply(h0);
  }
  for (Index l = 0; l < n_layers; ++l) {
    const std::vector<std::int32_t>* rows = rows_only && l == n_layers - 1 ? &cache.last_rows : nullptr;
    layer_forward(l, hidden.middleRows(l * n, n), batch, rows, rng, cache,
                  hidden.middleRows((l + 1) * n, rows ? static_cast<Index>(rows->size()) : n));
  }
}

template <class T>
void Bert<T>::encode_backward(const Batch& batch, ModelCache<T>& cache) {
  const Index n = cache.batch * cache.seq, c = config_.dim, n_layers = config_.layers;
  const MatMap<T> hidden(cache.hidden.data.data(), (n_layers + 1) * n, c);
  for (Index l = n_layers - 1; l >= 0; --l) {
    layer_backward(l, hidden.middleRows(l * n, n), cache.rows_only && l == n_layers - 1 ? &cache.last_rows : nullptr,
                   cache);
    std::swap(cache.grad_in, cache.grad_out);
  }
  // h0 = dropout(LN(word[ids] + pos))
  MatMap<T> dh0(cache.grad_out.data.data(), n, c);
  if (cache.dropout_on) cache.emb_drop.apply(dh0);
  embeddings_.backward(batch, dh0, MatMap<T>(cache.emb_xhat.data.data(), n, c),
                       MatMap<T>(cache.emb_rstd.data.data(), n, 1), cache.grad_a.view(n, c), cache.ln_scratch,
                       cache.sound_only.rows ? &cache.sound_only : nullptr);
}

template <class T>
T Bert<T>::forward(const Batch& batch, ModelCache<T>& cache, const DropoutRng* given, LastRows last) const {
  check_task(Task::classify, "classifying");
  const DropoutRng* rng = given != nullptr && given->p > 0 ? given : nullptr;
  // The last layer computes [CLS] rows only, unless all rows are asked for
  // or queries and keys are tied (forward_rows needs them apart).
  const bool cls_only = last == LastRows::needed && !config_.tie_qk;
  if (cls_only) {  // the [CLS] rows
    cache.last_rows.resize(static_cast<std::size_t>(batch.size));
    for (Index b = 0; b < batch.size; ++b) cache.last_rows[b] = static_cast<std::int32_t>(b * batch.seq);
  }
  encode(batch, cls_only, rng, cache);
  return head_forward(batch, rng, cache);
}

template <class T>
void Bert<T>::backward(const Batch& batch, ModelCache<T>& cache) {
  if (grads_.empty()) throw Error("this model was loaded for inference only and cannot be trained");
  if (config_.multi_label ? batch.targets.empty() : batch.labels.empty())
    throw Error("backward needs a labelled batch");
  const Index b_size = cache.batch, seq = cache.seq, n = b_size * seq, c = config_.dim;
  head_backward(batch, cache);
  // The gradient w.r.t. the last layer's output: its [CLS] rows when it
  // computed those only, else every row with zeros off [CLS].
  const MatMap<T> dcls(cache.grad_cls.data.data(), b_size, c);
  if (cache.rows_only) {
    cache.grad_out.view(b_size, c) = dcls;
  } else {
    MatMap<T> dy = cache.grad_out.view(n, c);
    dy.setZero();
    for (Index b = 0; b < b_size; ++b) dy.row(b * seq) = dcls.row(b);
  }
  encode_backward(batch, cache);
}

template <class T>
void label_probabilities(const ModelConfig& config, Ref<T> x) {
  if (config.multi_label)
    sigmoid<T>(x);
  else
    softmax_rows<T>(x);
}

template void label_probabilities<ZIBERT_REAL>(const ModelConfig&, Ref<ZIBERT_REAL>);
template struct Embeddings<ZIBERT_REAL>;
template class Bert<ZIBERT_REAL>;

}  // namespace zibert
