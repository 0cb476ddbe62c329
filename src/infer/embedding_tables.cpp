#include "zibert/infer/embedding_tables.hpp"

#include <algorithm>
#include <type_traits>

#include "zibert/base/error.hpp"
#include "zibert/nn/gemm.hpp"

namespace zibert {
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
std::unique_ptr<EmbeddingTables<T>> embedding_tables(const Bert<T>& net, std::size_t max_bytes) {
  const ModelConfig& config = net.config();
  const Embeddings<T>& emb = net.embeddings();
  const Linear<T>& qkv = net.layers()[0].attention.qkv;
  const Index width = qkv.weight.rows, vocab = config.vocab_size, positions = config.position ? config.max_len : 0;
  if (static_cast<std::size_t>((vocab + positions) * width) * sizeof(T) > max_bytes) return nullptr;
  auto tables = std::make_unique<EmbeddingTables<T>>();
  tables->weights = net.values();
  tables->width = width;
  tables->a = qkv.weight.w() * emb.ln.gamma.row().asDiagonal();
  tables->word.reset(new T[static_cast<std::size_t>(vocab * width)]);  // filled row by row, as tokens come
  tables->filled.assign(static_cast<std::size_t>(vocab), 0);
  tables->pos.resize(static_cast<std::size_t>(positions * width));
  if (positions > 0 && emb.token_type.value) {  // every token's type is 0's: one row added to every position
    MatR<T> pos_type = emb.position.w();
    pos_type.rowwise() += emb.token_type.w().row(0);
    centred_projections<T>(MatMap<T>(pos_type.data(), positions, pos_type.cols()), nullptr, positions, tables->a,
                           tables->pos.data());
  } else if (positions > 0) {
    centred_projections<T>(emb.position.w(), nullptr, positions, tables->a, tables->pos.data());
  }
  tables->bias.resize(static_cast<std::size_t>(width));
  Eigen::Map<Eigen::Matrix<T, 1, Eigen::Dynamic>>(tables->bias.data(), width) =
      emb.ln.beta.row() * qkv.weight.w().transpose() + qkv.bias.row();
  const std::int32_t pad = kPadId;  // every padded batch has it
  tabulate(net, *tables, &pad, 1);
  return tables;
}

template <class T>
void check_tables(const Bert<T>& net, const EmbeddingTables<T>& tables) {
  if (tables.weights != net.values()) throw Error("embedding tables of another model");
}

template <class T>
void tabulate(const Bert<T>& net, EmbeddingTables<T>& tables, const std::int32_t* ids, std::size_t n) {
  check_tables(net, tables);
  std::vector<std::int32_t> missing;
  for (std::size_t i = 0; i < n; ++i) {
    const std::int32_t id = ids[i];
    if (id < 0 || id >= net.config().vocab_size) throw Error("token id out of range");
    if (!tables.filled[id]) missing.push_back(id);
  }
  if (missing.empty()) return;
  std::sort(missing.begin(), missing.end());
  missing.erase(std::unique(missing.begin(), missing.end()), missing.end());
  const Index width = tables.width, m = static_cast<Index>(missing.size());
  AlignedVector<T> rows(static_cast<std::size_t>(m * width));
  const Embeddings<T>& emb = net.embeddings();
  if (emb.reading.value) {  // a token's vector is its word row plus its readings'
    MatR<T> vectors(m, emb.word.cols);
    for (Index r = 0; r < m; ++r) emb.token(missing[r], vectors.row(r));
    centred_projections<T>(MatMap<T>(vectors.data(), m, vectors.cols()), nullptr, m, tables.a, rows.data());
  } else {
    centred_projections<T>(emb.word.w(), missing.data(), m, tables.a, rows.data());
  }
  for (Index r = 0; r < m; ++r) {
    std::copy_n(rows.data() + r * width, width, tables.word.get() + missing[r] * width);
    tables.filled[missing[r]] = 1;
  }
}

template <class T>
void gather_projections(const Bert<T>& net, const EmbeddingTables<T>& tables, const Batch& batch, const T* rstd,
                        Ref<T> proj) {
  check_tables(net, tables);
  const ModelConfig& config = net.config();
  const Index n = batch.size * batch.seq, width = tables.width;
  const CMatMap<T> word_tab(tables.word.get(), config.vocab_size, width);              // (V, W)
  const CMatMap<T> pos_tab(tables.pos.data(), config.position ? config.max_len : 0, width);  // (max_len, W)
  const Eigen::Map<const Eigen::Array<T, 1, Eigen::Dynamic>> bias(tables.bias.data(), width);
  for (Index i = 0; i < n; ++i) {
    if (!tables.filled[batch.ids[i]]) throw Error("embedding tables lack a row the batch needs (tabulate)");
    if (config.position)
      proj.row(i) = ((word_tab.row(batch.ids[i]) + pos_tab.row(i % batch.seq)).array() * rstd[i] + bias).matrix();
    else
      proj.row(i) = (word_tab.row(batch.ids[i]).array() * rstd[i] + bias).matrix();
  }
}

#define ZIBERT_INSTANTIATE(T)                                                                                    \
  template std::unique_ptr<EmbeddingTables<T>> embedding_tables<T>(const Bert<T>&, std::size_t);              \
  template void tabulate<T>(const Bert<T>&, EmbeddingTables<T>&, const std::int32_t*, std::size_t);           \
  template void check_tables<T>(const Bert<T>&, const EmbeddingTables<T>&);                                   \
  template void gather_projections<T>(const Bert<T>&, const EmbeddingTables<T>&, const Batch&, const T*, Ref<T>);
ZIBERT_INSTANTIATE(ZIBERT_REAL)
#undef ZIBERT_INSTANTIATE

}  // namespace zibert
