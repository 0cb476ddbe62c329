#include "zibert/infer/fast_forward.hpp"

#include <omp.h>

#include <exception>

#include "zibert/base/error.hpp"

namespace zibert {

namespace {

// One encoder layer, inference: x (N, C) → y (rows, C). folded: the last
// layer of an untied model, on the [CLS] rows only with no keys or values.
// projected: cache.attn.qkv already holds x's projections (gathered).
template <class T>
void layer_infer(const EncoderLayer<T>& layer, const LinearProducts<T>& products, const CRef<T>& x, Index batch,
                 Index seq, bool folded, bool projected, InferenceCache<T>& cache, InferenceLayerCache<T>& lc,
                 Ref<T> y) {
  const Index c = x.cols(), f = layer.up.weight.rows, rows = folded ? batch : batch * seq;
  const SelfAttention<T>& attention = layer.attention;
  MatMap<T> a = lc.attn_out.view(rows, c);  // (rows, C)
  if (folded) {
    attention.forward_cls_folded(x, batch, seq, cache.key_valid.data(), lc.attn, a);
  } else {
    if (!projected) products.apply(attention.qkv, x, lc.attn.qkv.view(rows, attention.qkv.weight.rows));
    attention.attend(batch, seq, cache.key_valid.data(), lc.attn, WeightRows::unnormalised);
    products.apply(attention.output, lc.attn.ctx.view(rows, c), a);
  }
  // The residual: x's rows, or its [CLS] rows (seq rows apart) when folded.
  using Stride = Eigen::OuterStride<>;
  const Eigen::Map<const MatR<T>, 0, Stride> skip(x.data(), rows, c, Stride(folded ? seq * c : c));
  MatMap<T> hid = lc.hidden.view(rows, c), ff = lc.ff.view(rows, f), out = lc.ff_out.view(rows, c);
  layer.ln1.forward_sum(skip, a, hid);
  products.apply(layer.up, hid, ff);
  gelu_forward<T>(ff, ff);
  products.apply(layer.down, ff, out);
  layer.ln2.forward_sum(hid, out, y);
}

}  // namespace

// The encoder layers: hidden block l+1 from block l. fold: the last layer
// computes the [CLS] rows only, folded (untied models).
template <class T>
void encode(const Bert<T>& net, const Batch& batch, InferenceCache<T>& cache, const EmbeddingTables<T>* tables,
            const LinearProducts<T>& products, bool fold) {
  const ModelConfig& config = net.config();
  const Index b_size = batch.size, seq = batch.seq, n = b_size * seq, c = config.dim, n_layers = config.layers;
  if (seq > config.max_len) throw Error("batch sequence length exceeds the model's max_len");
  if (tables) check_tables(net, *tables);
  cache.layers.resize(n_layers);
  cache.key_valid.resize(n);
  for (Index i = 0; i < n; ++i) cache.key_valid[i] = batch.ids[i] != kPadId;

  MatMap<T> hidden = cache.hidden.view((n_layers + 1) * n, c);  // ((L+1)*N, C)
  net.embeddings().forward(batch, cache.emb_sum.view(n, c), hidden.middleRows(0, n), cache.emb_xhat.view(n, c),
                           cache.emb_rstd.view(n, 1));
  // The first layer's projections come from the tables, unless it is folded.
  const bool gathered = tables && !(fold && n_layers == 1);
  if (gathered)
    gather_projections<T>(net, *tables, batch, cache.emb_rstd.data.data(),
                          cache.layers[0].attn.qkv.view(n, tables->width));
  for (Index l = 0; l < n_layers; ++l) {
    const bool folded = fold && l == n_layers - 1;
    layer_infer<T>(net.layers()[l], products, hidden.middleRows(l * n, n), b_size, seq, folded, l == 0 && gathered,
                   cache, cache.layers[l], hidden.middleRows((l + 1) * n, folded ? b_size : n));
  }
}

template <class T>
std::vector<const Linear<T>*> network_linears(const Bert<T>& net) {
  std::vector<const Linear<T>*> out;
  for (const EncoderLayer<T>& layer : net.layers())
    for (const Linear<T>* lin : {&layer.attention.qkv, &layer.attention.output, &layer.up, &layer.down})
      out.push_back(lin);
  if (net.config().task == Task::classify) {
    out.push_back(&net.head().pooler);
    out.push_back(&net.head().classifier);
  } else {
    out.push_back(&net.mlm_head().transform);
  }
  return out;
}

template <class T>
const LinearProducts<T>& float_products() {
  static const LinearProducts<T> products;
  return products;
}

template <class T>
CMatMap<T> infer_forward(const Bert<T>& net, const Batch& batch, InferenceCache<T>& cache,
                         const EmbeddingTables<T>* tables, const LinearProducts<T>& products) {
  const ModelConfig& config = net.config();
  const Index b_size = batch.size, seq = batch.seq, n = b_size * seq, c = config.dim, n_layers = config.layers;
  const bool fold = !config.tie_qk;  // forward_cls_folded needs queries and keys apart
  encode(net, batch, cache, tables, products, fold);

  // pooled = tanh([CLS] Wpᵀ + bp); probs = softmax (or σ, multi-label) of pooled Wcᵀ + bc
  MatMap<T> cls = cache.cls.view(b_size, c);  // (B, C)
  const CMatMap<T> last(cache.hidden.data.data() + n_layers * n * c, n, c);
  for (Index b = 0; b < b_size; ++b) cls.row(b) = last.row(fold ? b : b * seq);
  MatMap<T> pooled = cache.pooled.view(b_size, c);  // (B, C)
  products.apply(net.head().pooler, cls, pooled);
  pooled = pooled.array().tanh().matrix();
  MatMap<T> logits = cache.logits.view(b_size, config.labels), probs = cache.probs.view(b_size, config.labels);
  products.apply(net.head().classifier, pooled, logits);
  probs = logits;
  label_probabilities<T>(config, probs);
  return CMatMap<T>(probs.data(), b_size, config.labels);
}

template <class T>
CMatMap<T> infer_hidden(const Bert<T>& net, const Batch& batch, InferenceCache<T>& cache,
                        const EmbeddingTables<T>* tables, const LinearProducts<T>& products) {
  encode(net, batch, cache, tables, products, /*fold=*/false);
  const Index n = batch.size * batch.seq, c = net.config().dim;
  return CMatMap<T>(cache.hidden.data.data() + net.config().layers * n * c, n, c);
}

template <class T>
void for_each_batch(std::size_t n_batches, std::vector<InferenceCache<T>>& caches,
                    const std::function<void(std::size_t, InferenceCache<T>&)>& run) {
  const int threads = omp_get_max_threads();
  if (static_cast<int>(caches.size()) < threads) caches.resize(threads);
  const auto n = static_cast<std::ptrdiff_t>(n_batches);
  std::exception_ptr error;
#pragma omp parallel for schedule(dynamic) if (n > 1)
  for (std::ptrdiff_t b = 0; b < n; ++b) {
    try {
      run(static_cast<std::size_t>(b), caches[omp_get_thread_num()]);
    } catch (...) {
#pragma omp critical(zibert_predict_error)
      if (!error) error = std::current_exception();
    }
  }
  if (error) std::rethrow_exception(error);
}

template <class T>
void predict_batches(const Bert<T>& net, const std::vector<Batch>& batches, std::vector<InferenceCache<T>>& caches,
                     const std::function<void(std::size_t, const CMatMap<T>&)>& take, const EmbeddingTables<T>* tables,
                     const LinearProducts<T>& products) {
  for_each_batch<T>(batches.size(), caches, [&](std::size_t b, InferenceCache<T>& cache) {
    take(b, infer_forward(net, batches[b], cache, tables, products));
  });
}

#define ZIBERT_INSTANTIATE(T)                                                                                 \
  template const LinearProducts<T>& float_products<T>();                                                       \
  template std::vector<const Linear<T>*> network_linears<T>(const Bert<T>&);                                   \
  template CMatMap<T> infer_forward<T>(const Bert<T>&, const Batch&, InferenceCache<T>&, const EmbeddingTables<T>*, \
                                       const LinearProducts<T>&);                                                \
  template CMatMap<T> infer_hidden<T>(const Bert<T>&, const Batch&, InferenceCache<T>&, const EmbeddingTables<T>*,  \
                                      const LinearProducts<T>&);                                                 \
  template void for_each_batch<T>(std::size_t, std::vector<InferenceCache<T>>&,                                      \
                                  const std::function<void(std::size_t, InferenceCache<T>&)>&);                      \
  template void predict_batches<T>(const Bert<T>&, const std::vector<Batch>&, std::vector<InferenceCache<T>>&,       \
                                   const std::function<void(std::size_t, const CMatMap<T>&)>&,                       \
                                   const EmbeddingTables<T>*, const LinearProducts<T>&);
ZIBERT_INSTANTIATE(ZIBERT_REAL)
#undef ZIBERT_INSTANTIATE

}  // namespace zibert
