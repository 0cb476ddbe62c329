#include "zibert/model/bert.hpp"

#include <algorithm>
#include <cmath>
#include <type_traits>

#include "zibert/base/error.hpp"
#include "zibert/nn/gemm.hpp"
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
  word_emb_ = param("bert.embeddings.word_embeddings.weight");
  if (config_.position) pos_emb_ = param("bert.embeddings.position_embeddings.weight");
  emb_ln_ = {param("bert.embeddings.LayerNorm.weight"), param("bert.embeddings.LayerNorm.bias"),
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
  pooler_ = {param("bert.pooler.dense.weight"), param("bert.pooler.dense.bias")};
  classifier_ = {param("classifier.weight"), param("classifier.bias")};
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
  word_emb_.w().row(0).setZero();
}

namespace {

// out[r] = A(e[r] − mean e[r]) for rows e[r] of `embedding` (C wide), with A =
// Wqkv·diag(γ) (W x C). The mean is a plain sequential sum and the product
// sums each row in one fixed order, so a row's value does not depend on which
// other rows come along (Eigen's double product is run a row at a time).
template <class T>
void centred_projections(const MatMap<T>& embedding, const std::int32_t* rows, Index m, const MatR<T>& a,
                         T* out) {
  const Index c = embedding.cols(), width = a.rows();
  MatR<T> centred(m, c);
  for (Index r = 0; r < m; ++r) {
    const T* e = embedding.data() + (rows ? rows[r] : r) * c;
    T sum = 0;
    for (Index j = 0; j < c; ++j) sum += e[j];
    const T mean = sum / T(c);
    for (Index j = 0; j < c; ++j) centred(r, j) = e[j] - mean;
  }
  if (std::is_same_v<T, float> && gemm_is_native()) {
    matmul<T>(centred, false, a, true, MatMap<T>(out, m, width), false);
    return;
  }
  for (Index r = 0; r < m; ++r)
    matmul<T>(centred.row(r), false, a, true, MatMap<T>(out + r * width, 1, width), false);
}

}  // namespace

template <class T>
std::unique_ptr<EmbeddingTables<T>> Bert<T>::embedding_tables(std::size_t max_bytes) const {
  const Linear<T>& qkv = layers_[0].attention.qkv;
  const Index width = qkv.weight.rows, vocab = config_.vocab_size, positions = config_.position ? config_.max_len : 0;
  if (static_cast<std::size_t>((vocab + positions) * width) * sizeof(T) > max_bytes) return nullptr;
  auto tables = std::make_unique<EmbeddingTables<T>>();
  tables->weights = values();
  tables->width = width;
  tables->a = qkv.weight.w() * emb_ln_.gamma.row().asDiagonal();
  tables->word.reset(new T[static_cast<std::size_t>(vocab * width)]);  // filled row by row, as tokens come
  tables->filled.assign(static_cast<std::size_t>(vocab), 0);
  tables->pos.resize(static_cast<std::size_t>(positions * width));
  if (positions > 0)
    centred_projections<T>(pos_emb_.w(), nullptr, positions, tables->a, tables->pos.data());
  tables->bias.resize(static_cast<std::size_t>(width));
  Eigen::Map<Eigen::Matrix<T, 1, Eigen::Dynamic>>(tables->bias.data(), width) =
      emb_ln_.beta.row() * qkv.weight.w().transpose() + qkv.bias.row();
  const std::int32_t pad = kPadId;  // every padded batch has it
  tabulate(*tables, &pad, 1);
  return tables;
}

template <class T>
void Bert<T>::check_tables(const EmbeddingTables<T>& tables) const {
  if (tables.weights != values()) throw Error("embedding tables of another model");
}

template <class T>
void Bert<T>::tabulate(EmbeddingTables<T>& tables, const std::int32_t* ids, std::size_t n) const {
  check_tables(tables);
  std::vector<std::int32_t> missing;
  for (std::size_t i = 0; i < n; ++i) {
    const std::int32_t id = ids[i];
    if (id < 0 || id >= config_.vocab_size) throw Error("token id out of range");
    if (!tables.filled[id]) missing.push_back(id);
  }
  if (missing.empty()) return;
  std::sort(missing.begin(), missing.end());
  missing.erase(std::unique(missing.begin(), missing.end()), missing.end());
  const Index width = tables.width, m = static_cast<Index>(missing.size());
  AlignedVector<T> rows(static_cast<std::size_t>(m * width));
  centred_projections<T>(word_emb_.w(), missing.data(), m, tables.a, rows.data());
  for (Index r = 0; r < m; ++r) {
    std::copy_n(rows.data() + r * width, width, tables.word.get() + missing[r] * width);
    tables.filled[missing[r]] = 1;
  }
}

template <class T>
T Bert<T>::forward(const Batch& batch, ModelCache<T>& cache, const DropoutRng* rng, bool inference,
                   const EmbeddingTables<T>* given) const {
  const Index b_size = batch.size, seq = batch.seq, n = b_size * seq, c = config_.dim, f = config_.ffn;
  const Index n_layers = config_.layers;
  if (seq > config_.max_len) throw Error("batch sequence length exceeds the model's max_len");
  const bool drop = rng != nullptr && rng->p > 0;
  cache.batch = b_size;
  cache.seq = seq;
  cache.dropout_on = drop;
  cache.layers.resize(n_layers);
  cache.key_valid.resize(n);
  for (Index i = 0; i < n; ++i) cache.key_valid[i] = batch.ids[i] != kPadId;

  MatMap<T> hidden = cache.hidden.view((n_layers + 1) * n, c);  // ((L+1)*N, C)
  MatMap<T> emb = cache.emb_sum.view(n, c);                    // (N, C)
  MatMap<T> word = word_emb_.w();
  for (Index i = 0; i < n; ++i) {
    std::int32_t id = batch.ids[i];
    if (id < 0 || id >= config_.vocab_size) throw Error("token id out of range");
    emb.row(i) = word.row(id);
    if (config_.position) emb.row(i) += pos_emb_.w().row(i % seq);
  }
  auto h0 = hidden.middleRows(0, n);
  emb_ln_.forward(emb, h0, cache.emb_xhat.view(n, c), cache.emb_rstd.view(n, 1));
  if (drop) {
    MatMap<T> mask = cache.emb_drop.view(n, c);
    dropout_mask<T>(*rng, 0, mask, batch.first * seq);
    h0.array() *= mask.array();
  }

  const bool cls_only = !config_.tie_qk && !cache.all_rows;
  // Inference with tables gathers the first layer's projections (unless
  // that layer is a folded [CLS] layer, which projects no keys or values).
  if (given) check_tables(*given);
  const EmbeddingTables<T>* tables = inference && !drop && !(cls_only && n_layers == 1) ? given : nullptr;
  if (tables) {
    const Index width = tables->width;
    MatMap<T> proj = cache.layers[0].attn.qkv.view(n, width);
    const CMatMap<T> word_tab(tables->word.get(), config_.vocab_size, width);
    const CMatMap<T> pos_tab(tables->pos.data(), config_.position ? config_.max_len : 0, width);
    const Eigen::Map<const Eigen::Array<T, 1, Eigen::Dynamic>> bias(tables->bias.data(), width);
    const T* rstd = cache.emb_rstd.data.data();
    for (Index i = 0; i < n; ++i) {
      if (!tables->filled[batch.ids[i]]) throw Error("embedding tables lack a row the batch needs (Bert::tabulate)");
      if (config_.position)
        proj.row(i) = ((word_tab.row(batch.ids[i]) + pos_tab.row(i % seq)).array() * rstd[i] + bias).matrix();
      else
        proj.row(i) = (word_tab.row(batch.ids[i]).array() * rstd[i] + bias).matrix();
    }
  }
  cache.cls_only = cls_only;
  cache.inference = inference;
  const auto first_row = static_cast<std::uint64_t>(batch.first * seq);
  for (Index l = 0; l < n_layers; ++l) {
    const EncoderLayer<T>& layer = layers_[l];
    EncoderLayerCache<T>& lc = cache.layers[l];
    // The last layer of a cls_only pass works on the B [CLS] rows, every
    // other on all N rows; dropout masks are those of the same rows in full.
    const bool last_cls = cls_only && l == n_layers - 1;
    const Index rows = last_cls ? b_size : n;
    const std::uint64_t row_step = last_cls ? static_cast<std::uint64_t>(seq) : 1;
    auto x = hidden.middleRows(l * n, n);
    auto y = hidden.middleRows((l + 1) * n, rows);
    MatMap<T> a = lc.attn_out.view(rows, c);  // (rows, C)
    if (last_cls && inference)  // no keys or values: nothing needs them after this pass
      layer.attention.forward_cls_folded(x, b_size, seq, cache.key_valid.data(), lc.attn, a);
    else if (last_cls)
      layer.attention.forward_cls(x, b_size, seq, cache.key_valid.data(), lc.attn, a);
    else
      layer.attention.forward(x, b_size, seq, cache.key_valid.data(), lc.attn, a, !inference || cache.all_rows,
                              /*projected=*/l == 0 && tables);
    if (drop) {
      MatMap<T> mask = lc.drop1.view(rows, c);
      dropout_mask<T>(*rng, 1 + 2 * l, mask, first_row, row_step);
      a.array() *= mask.array();
    }
    // The residual: x's rows, or its [CLS] rows (seq rows apart) for last_cls.
    using Stride = Eigen::OuterStride<>;
    const Eigen::Map<const MatR<T>, 0, Stride> skip(x.data(), rows, c, Stride(last_cls ? seq * c : c));
    MatMap<T> hid = lc.hidden.view(rows, c);
    if (inference) {
      layer.ln1.forward_sum(skip, a, hid);
    } else {
      MatMap<T> res = lc.res.view(rows, c);  // (rows, C)
      res = skip + a;
      layer.ln1.forward(res, hid, lc.ln1_xhat.view(rows, c), lc.ln1_rstd.view(rows, 1));
    }
    // Only backward needs the pre-activation: inference applies GELU in
    // place, one (rows, F) buffer in cache instead of two.
    MatMap<T> pre = lc.ff_pre.view(rows, f), out = lc.ff_out.view(rows, c);
    MatMap<T> act = inference ? pre : lc.ff_act.view(rows, f);
    layer.up.forward(hid, pre);
    gelu_forward<T>(pre, act);
    layer.down.forward(act, out);
    if (drop) {
      MatMap<T> mask = lc.drop2.view(rows, c);
      dropout_mask<T>(*rng, 2 + 2 * l, mask, first_row, row_step);
      out.array() *= mask.array();
    }
    if (inference) {
      layer.ln2.forward_sum(hid, out, y);
    } else {
      MatMap<T> res = lc.res.view(rows, c);
      res = hid + out;
      layer.ln2.forward(res, y, lc.ln2_xhat.view(rows, c), lc.ln2_rstd.view(rows, 1));
    }
  }

  MatMap<T> cls = cache.cls.view(b_size, c);  // (B, C)
  auto last = hidden.middleRows(n_layers * n, n);
  for (Index b = 0; b < b_size; ++b) cls.row(b) = last.row(cls_only ? b : b * seq);
  MatMap<T> pooled = cache.pooled.view(b_size, c);
  pooler_.forward(cls, pooled);
  pooled = pooled.array().tanh().matrix();
  MatMap<T> pooled_dropped = cache.pooled_dropped.view(b_size, c);
  pooled_dropped = pooled;
  if (drop) {
    MatMap<T> mask = cache.pool_drop.view(b_size, c);
    dropout_mask<T>(*rng, 1000, mask, batch.first);
    pooled_dropped.array() *= mask.array();
  }
  MatMap<T> logits = cache.logits.view(b_size, config_.labels);
  classifier_.forward(pooled_dropped, logits);
  MatMap<T> probs = cache.probs.view(b_size, config_.labels);
  if (batch.labels.empty()) {
    probs = logits;
    softmax_rows<T>(probs);
    return T(0);
  }
  for (std::int32_t label : batch.labels)
    if (label < 0 || label >= config_.labels) throw Error("label id out of range");
  return cross_entropy_forward<T>(logits, batch.labels.data(), probs);
}

template <class T>
CMatMap<T> Bert<T>::predict(const Batch& batch, ModelCache<T>& cache, const EmbeddingTables<T>* tables) const {
  // Sequences go through in groups of about kPredictRows token rows, so that
  // one step's activations stay in the core's L2 cache instead of the whole
  // batch's streaming through L3. A sequence's probabilities do not depend on
  // which others share its pass. Attention maps (all_rows) need the batch whole.
  const Index group = cache.all_rows ? batch.size : std::max<Index>(1, kPredictRows / std::max<Index>(1, batch.seq));
  MatMap<T> out = cache.predictions.view(batch.size, config_.labels);
  for (Index b0 = 0; b0 < batch.size; b0 += group) {
    // Unlabelled: predict needs no loss, and no label is checked.
    const Batch part = batch.part(b0, std::min(group, batch.size - b0), /*with_labels=*/false);
    forward(part, cache, nullptr, /*inference=*/true, tables);
    out.middleRows(b0, part.size) = MatMap<T>(cache.probs.data.data(), part.size, config_.labels);
  }
  return CMatMap<T>(out.data(), batch.size, config_.labels);
}

template <class T>
void Bert<T>::backward(const Batch& batch, ModelCache<T>& cache) {
  if (grads_.empty()) throw Error("this model was loaded for inference only and cannot be trained");
  if (cache.inference) throw Error("backward needs a forward pass that kept its cache (inference = false)");
  const Index b_size = cache.batch, seq = cache.seq, n = b_size * seq, c = config_.dim, f = config_.ffn;
  const Index n_layers = config_.layers;
  const bool drop = cache.dropout_on;
  MatMap<T> hidden(cache.hidden.data.data(), (n_layers + 1) * n, c);

  // loss = CE(logits); logits = pooled_dropped Wcᵀ + bc; pooled = tanh(cls Wpᵀ + bp)
  MatMap<T> probs(cache.probs.data.data(), b_size, config_.labels);
  MatMap<T> dlogits = cache.grad_logits.view(b_size, config_.labels);
  cross_entropy_backward<T>(probs, batch.labels.data(), dlogits);
  MatMap<T> dpooled = cache.grad_pooled.view(b_size, c);
  Ref<T> dpooled_ref(dpooled);
  classifier_.backward(MatMap<T>(cache.pooled_dropped.data.data(), b_size, c), dlogits, &dpooled_ref);
  if (drop) dpooled.array() *= MatMap<T>(cache.pool_drop.data.data(), b_size, c).array();
  MatMap<T> pooled(cache.pooled.data.data(), b_size, c);
  dpooled.array() *= (T(1) - pooled.array().square());
  MatMap<T> dcls = cache.grad_cls.view(b_size, c);
  Ref<T> dcls_ref(dcls);
  pooler_.backward(MatMap<T>(cache.cls.data.data(), b_size, c), dpooled, &dcls_ref);

  // The gradient w.r.t. the current layer's output: the [CLS] rows only
  // when the last layer ran cls_only, else all rows with zeros off [CLS].
  const bool cls_only = cache.cls_only;
  if (cls_only) {
    cache.grad_out.view(b_size, c) = dcls;
  } else {
    MatMap<T> dy = cache.grad_out.view(n, c);
    dy.setZero();
    for (Index b = 0; b < b_size; ++b) dy.row(b * seq) = dcls.row(b);
  }

  for (Index l = n_layers - 1; l >= 0; --l) {
    const EncoderLayer<T>& layer = layers_[l];
    EncoderLayerCache<T>& lc = cache.layers[l];
    const bool last_cls = cls_only && l == n_layers - 1;
    const Index rows = last_cls ? b_size : n;
    MatMap<T> dy_l(cache.grad_out.data.data(), rows, c);
    MatMap<T> dx_l = cache.grad_in.view(n, c);
    MatMap<T> da = cache.grad_a.view(rows, c), db = cache.grad_b.view(rows, c), dc = cache.grad_c.view(rows, c);
    MatMap<T> dff = cache.grad_ff.view(rows, f);
    // y = LN2(hid + dropout(down(GELU(up(hid)))))
    layer.ln2.backward(dy_l, MatMap<T>(lc.ln2_xhat.data.data(), rows, c),
                       MatMap<T>(lc.ln2_rstd.data.data(), rows, 1), da);
    db = da;  // residual path into hid
    dc = da;
    if (drop) dc.array() *= MatMap<T>(lc.drop2.data.data(), rows, c).array();
    Ref<T> dff_ref(dff);
    MatMap<T> act(lc.ff_act.data.data(), rows, f), pre(lc.ff_pre.data.data(), rows, f);
    layer.down.backward(act, dc, &dff_ref);
    gelu_backward<T>(pre, dff, dff);
    Ref<T> db_ref(db);
    layer.up.backward(MatMap<T>(lc.hidden.data.data(), rows, c), dff, &db_ref, true);
    // hid = LN1(x + dropout(attention(x)))
    layer.ln1.backward(db, MatMap<T>(lc.ln1_xhat.data.data(), rows, c),
                       MatMap<T>(lc.ln1_rstd.data.data(), rows, 1), da);
    dc = da;
    if (drop) dc.array() *= MatMap<T>(lc.drop1.data.data(), rows, c).array();
    if (last_cls) {
      MatMap<T> dx_attn = cache.grad_b.view(n, c);
      layer.attention.backward_cls(hidden.middleRows(l * n, n), dc, b_size, seq, lc.attn, dx_attn);
      dx_l = dx_attn;
      for (Index b = 0; b < b_size; ++b) dx_l.row(b * seq) += da.row(b);  // the residual into [CLS]
    } else {
      layer.attention.backward(hidden.middleRows(l * n, n), dc, b_size, seq, lc.attn, db);
      dx_l = da + db;
    }
    std::swap(cache.grad_in, cache.grad_out);
  }

  // h0 = dropout(LN(word[ids] + pos))
  MatMap<T> dh0(cache.grad_out.data.data(), n, c);
  if (drop) dh0.array() *= MatMap<T>(cache.emb_drop.data.data(), n, c).array();
  MatMap<T> demb = cache.grad_a.view(n, c);
  emb_ln_.backward(dh0, MatMap<T>(cache.emb_xhat.data.data(), n, c), MatMap<T>(cache.emb_rstd.data.data(), n, 1),
                   demb);
  MatMap<T> dword = word_emb_.g();
  for (Index i = 0; i < n; ++i) {
    if (batch.ids[i] == kPadId) continue;  // [PAD] rows carry no gradient
    dword.row(batch.ids[i]) += demb.row(i);
    if (config_.position) pos_emb_.g().row(i % seq) += demb.row(i);
  }
}

template class Bert<float>;
template class Bert<double>;

}  // namespace zibert
