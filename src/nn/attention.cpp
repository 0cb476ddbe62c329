#include "zibert/nn/attention.hpp"

#include <omp.h>

#include <cmath>

#include "zibert/base/error.hpp"
#include "zibert/nn/gemm.hpp"
#include "zibert/nn/softmax.hpp"

namespace zibert {
namespace {

// The query rows (0..C) and the key and value rows (C..3C) of the fused
// projection, as Linear views of their own.
template <class T>
Linear<T> projection_rows(const Linear<T>& qkv, Index first, Index rows) {
  const Index cols = qkv.weight.cols;
  auto at = [](T* base, Index offset) { return base ? base + offset : nullptr; };
  return {{qkv.weight.value + first * cols, at(qkv.weight.grad, first * cols), rows, cols},
          {qkv.bias.value + first, at(qkv.bias.grad, first), rows, 1}};
}

// Head weights p (T, T) = masked softmax(q kᵀ/√D) for one sequence's
// queries q (T, D) and keys k (T, D). Normalised rows, or with row_sums
// unnormalised ones and their sums. Returns how many leading keys can have
// weight (the rest are trailing [PAD] keys).
template <class T>
Index head_weights(const CRef<T>& q, const CRef<T>& k, const std::uint8_t* valid, T scale, Ref<T> p,
                   T* row_sums = nullptr) {
  matmul<T>(q, false, k, true, p, false);
  return masked_softmax<T>(p, valid, scale, row_sums);
}

}  // namespace

template <class T>
void SelfAttention<T>::forward(const CRef<T>& x, Index batch, Index seq, const std::uint8_t* key_valid,
                               AttentionCache<T>& cache, Ref<T> y) const {
  const Index n = batch * seq, c = x.cols();
  qkv.forward(x, cache.qkv.view(n, tied ? 2 * c : 3 * c));  // (B*T, 3C) or (B*T, 2C)
  attend(batch, seq, key_valid, cache, WeightRows::normalised);
  output.forward(cache.ctx.view(n, c), y);
}

template <class T>
void SelfAttention<T>::attend(Index batch, Index seq, const std::uint8_t* key_valid, AttentionCache<T>& cache,
                              WeightRows weight_rows) const {
  const Index n = batch * seq, c = output.weight.rows, d = c / heads;
  const Index width = tied ? 2 * c : 3 * c, k_off = tied ? 0 : c, v_off = tied ? c : 2 * c;
  const T scale = T(1) / std::sqrt(T(d));
  const bool normalised = weight_rows == WeightRows::normalised;
  if (cache.qkv.data.size() < static_cast<std::size_t>(n * width)) throw Error("attend: the projections are missing");
  MatMap<T> qkv_out(cache.qkv.data.data(), n, width);  // (B*T, 3C) or (B*T, 2C)
  // Kept for backward: (B*H*T, T), row (b*H+h)*T+i for query i of head h.
  // Otherwise a (T, T) block per thread: unnormalised rows at a stride gemm
  // reads in place, normalised ones at stride T, as backward recomputes them.
  const bool keep = normalised && keeps_weights(batch, seq);
  const Index threads = omp_get_max_threads(), blocks = keep ? batch * heads : threads;
  MatMap<T> probs = cache.probs.view(blocks * seq, normalised ? seq : gemm_in_place_ld(seq));
  MatMap<T> ctx = cache.ctx.view(n, c);  // (B*T, C)
  MatMap<T> sums = cache.row_sums.view(normalised ? 0 : threads, seq);

  // Threads only pay off beyond a few thousand multiply-adds per block.
  const bool parallel = batch * heads * seq * seq * d > 65536;
#pragma omp parallel for collapse(2) schedule(static) if (parallel)
  for (Index b = 0; b < batch; ++b)
    for (Index h = 0; h < heads; ++h) {
      auto q = qkv_out.block(b * seq, h * d, seq, d);          // (T, D)
      auto k = qkv_out.block(b * seq, k_off + h * d, seq, d);  // (T, D)
      auto v = qkv_out.block(b * seq, v_off + h * d, seq, d);  // (T, D)
      const Index thread = omp_get_thread_num();
      auto p = probs.block((keep ? b * heads + h : thread) * seq, 0, seq, seq);  // (T, T)
      auto out = ctx.block(b * seq, h * d, seq, d);            // (T, D)
      // The trailing [PAD] keys (weight 0) stay out of the product.
      T* row_sums = normalised ? nullptr : &sums(thread, 0);
      const Index keys = head_weights<T>(q, k, key_valid + b * seq, scale, p, row_sums);
      matmul<T>(p.leftCols(keys), false, v.topRows(keys), false, out, false);
      if (row_sums)
        for (Index i = 0; i < seq; ++i) out.row(i) /= row_sums[i];
    }
}

template <class T>
void SelfAttention<T>::weights(const AttentionCache<T>& cache, Index batch, Index seq, const std::uint8_t* key_valid,
                               Index b, Ref<T> out) const {
  const Index c = output.weight.rows, d = c / heads, k_off = tied ? 0 : c;
  if (b < 0 || b >= batch || out.rows() != heads * seq || out.cols() != seq)
    throw Error("attention weights: no such sequence, or the wrong shape");
  const CMatMap<T> qkv_out(cache.qkv.data.data(), batch * seq, tied ? 2 * c : 3 * c);
  for (Index h = 0; h < heads; ++h)
    head_weights<T>(qkv_out.block(b * seq, h * d, seq, d), qkv_out.block(b * seq, k_off + h * d, seq, d),
                    key_valid + b * seq, T(1) / std::sqrt(T(d)), out.middleRows(h * seq, seq));
}

template <class T>
void SelfAttention<T>::backward(const CRef<T>& x, const CRef<T>& dy, Index batch, Index seq,
                                const std::uint8_t* key_valid, AttentionCache<T>& cache, Ref<T> dx) const {
  const Index n = batch * seq, c = x.cols(), d = c / heads;
  const Index width = tied ? 2 * c : 3 * c, k_off = tied ? 0 : c, v_off = tied ? c : 2 * c;
  const T scale = T(1) / std::sqrt(T(d));
  MatMap<T> qkv_out(cache.qkv.data.data(), n, width);
  MatMap<T> ctx(cache.ctx.data.data(), n, c);
  MatMap<T> dctx = cache.dctx.view(n, c);      // (B*T, C)
  MatMap<T> dqkv = cache.dqkv.view(n, width);  // (B*T, 3C) or (B*T, 2C)
  const Index threads = omp_get_max_threads();
  const bool kept = keeps_weights(batch, seq);
  MatMap<T> probs = cache.probs.view((kept ? batch * heads : threads) * seq, seq);  // as forward left it
  MatMap<T> dprobs_all = cache.dprobs.view(threads * seq, seq);  // (threads*T, T)

  Ref<T> dctx_ref(dctx);
  output.backward(ctx, dy, &dctx_ref);

  const bool parallel = batch * heads * seq * seq * d > 65536;
#pragma omp parallel for collapse(2) schedule(static) if (parallel)
  for (Index b = 0; b < batch; ++b)
    for (Index h = 0; h < heads; ++h) {
      auto q = qkv_out.block(b * seq, h * d, seq, d);
      auto k = qkv_out.block(b * seq, k_off + h * d, seq, d);
      auto v = qkv_out.block(b * seq, v_off + h * d, seq, d);
      const Index thread = omp_get_thread_num();
      auto p = probs.block((kept ? b * heads + h : thread) * seq, 0, seq, seq);
      auto da = dctx.block(b * seq, h * d, seq, d);
      auto dp = dprobs_all.block(thread * seq, 0, seq, seq);
      // Not kept: the forward's weights again, the same bits from the same products.
      if (!kept) head_weights<T>(q, k, key_valid + b * seq, scale, p);
      // a = p v  ⇒  dp = da vᵀ, dv = pᵀ da
      matmul<T>(da, false, v, true, dp, false);
      matmul<T>(p, true, da, false, dqkv.block(b * seq, v_off + h * d, seq, d), false);
      // p = softmax(s)  ⇒  ds = p ⊙ (dp − Σ_j p dp); s = q kᵀ·scale
      for (Index i = 0; i < seq; ++i) {
        T dot = p.row(i).dot(dp.row(i));
        dp.row(i) = (p.row(i).array() * (dp.row(i).array() - dot) * scale).matrix();
      }
      matmul<T>(dp, false, k, false, dqkv.block(b * seq, h * d, seq, d), false);
      // s = q qᵀ·scale when tied: q gets both halves
      matmul<T>(dp, true, q, false, dqkv.block(b * seq, k_off + h * d, seq, d), tied);
    }

  // The key bias adds q·b_k to every score of a query row, which softmax
  // ignores: its gradient is exactly zero. Keep it so, instead of letting
  // rounding noise through for Adam's normalisation to blow up.
  if (tied) {
    qkv.backward(x, dqkv, &dx);
    return;
  }
  MatMap<T> key_bias_grad = cache.key_bias_grad.view(1, c);
  key_bias_grad = qkv.bias.grad_row().segment(c, c);
  qkv.backward(x, dqkv, &dx);
  qkv.bias.grad_row().segment(c, c) = key_bias_grad;
}

template <class T>
void SelfAttention<T>::forward_rows(const CRef<T>& x, Index seq, std::span<const std::int32_t> rows,
                                    const std::uint8_t* key_valid, AttentionCache<T>& cache, Ref<T> y) const {
  if (tied) throw Error("forward_rows needs separate query and key projections");
  const Index n = x.rows(), c = x.cols(), d = c / heads, m = static_cast<Index>(rows.size());
  const T scale = T(1) / std::sqrt(T(d));
  for (Index i = 0; i < m; ++i)
    if (rows[i] < 0 || rows[i] >= n || (i > 0 && rows[i] <= rows[i - 1]))
      throw Error("forward_rows: the query rows must be ascending rows of x");
  MatMap<T> xq = cache.xq.view(m, c), q = cache.q.view(m, c);  // (M, C)
  MatMap<T> kv = cache.kv.view(n, 2 * c);                      // (B*T, 2C): k | v
  MatMap<T> probs = cache.probs.view(m * heads, seq);          // (M*H, T)
  MatMap<T> ctx = cache.ctx.view(m, c);                        // (M, C)
  for (Index i = 0; i < m; ++i) xq.row(i) = x.row(rows[i]);
  projection_rows(qkv, 0, c).forward(xq, q);
  projection_rows(qkv, c, 2 * c).forward(x, kv);
  for (Index i = 0; i < m; ++i) {
    const Index b = rows[i] / seq;
    for (Index h = 0; h < heads; ++h) {
      auto k = kv.block(b * seq, h * d, seq, d);      // (T, D)
      auto v = kv.block(b * seq, c + h * d, seq, d);  // (T, D)
      auto p = probs.row(i * heads + h);              // (1, T)
      p.noalias() = q.row(i).segment(h * d, d) * k.transpose();
      masked_softmax<T>(probs.middleRows(i * heads + h, 1), key_valid + b * seq, scale);
      ctx.row(i).segment(h * d, d).noalias() = p * v;
    }
  }
  output.forward(ctx, y);
}

template <class T>
void SelfAttention<T>::forward_cls_folded(const CRef<T>& x, Index batch, Index seq, const std::uint8_t* key_valid,
                                          AttentionCache<T>& cache, Ref<T> y) const {
  if (tied) throw Error("forward_cls_folded needs separate query and key projections");
  const Index c = x.cols(), d = c / heads, bh = batch * heads;
  const T scale = T(1) / std::sqrt(T(d));
  using Stride = Eigen::OuterStride<>;
  // Head h's column block of an (B*H, C) matrix whose row b*H+h belongs to
  // sequence b and head h: B rows, H*C apart.
  auto head_rows = [&](T* m, Index h) {
    return Eigen::Map<MatR<T>, 0, Stride>(m + h * c, batch, c, Stride(heads * c));
  };
  MatMap<T> xcls = cache.xq.view(batch, c), q = cache.q.view(batch, c);
  T* folded = cache.folded.view(2 * bh, c).data();
  MatMap<T> u(folded, bh, c), z(folded + bh * c, bh, c);  // (B*H, C) each
  MatMap<T> probs = cache.probs.view(bh, seq);           // (B*H, T)
  MatMap<T> ctx = cache.ctx.view(batch, c);               // (B, C)
  const CMatMap<T> w(qkv.weight.value, 3 * c, c);         // Wq | Wk | Wv
  for (Index b = 0; b < batch; ++b) xcls.row(b) = x.row(b * seq);
  projection_rows(qkv, 0, c).forward(xcls, q);
  // u_{b,h} = q_{b,h} Wk_h (Wk_h: key rows h*D..(h+1)*D), so that
  // q_{b,h}·k_t = u_{b,h}·x_t + q_{b,h}·bk_h, the last term the same for every key.
  for (Index h = 0; h < heads; ++h)
    matmul<T>(q.middleCols(h * d, d), false, w.middleRows(c + h * d, d), false, head_rows(u.data(), h), false);
  for (Index b = 0; b < batch; ++b) {
    auto xb = x.middleRows(b * seq, seq);          // (T, C)
    auto p = probs.middleRows(b * heads, heads);   // (H, T)
    matmul<T>(u.middleRows(b * heads, heads), false, xb, true, p, false);
    const Index keys = masked_softmax<T>(p, key_valid + b * seq, scale);
    matmul<T>(p.leftCols(keys), false, xb.topRows(keys), false, z.middleRows(b * heads, heads), false);  // Σ_t p_t x_t
  }
  // Σ_t p_t (x_t Wv_hᵀ + bv_h) = z_{b,h} Wv_hᵀ + bv_h, as the weights sum to one.
  for (Index h = 0; h < heads; ++h)
    matmul<T>(head_rows(z.data(), h), false, w.middleRows(2 * c + h * d, d), true, ctx.middleCols(h * d, d), false,
              qkv.bias.value + 2 * c + h * d);
  output.forward(ctx, y);
}

template <class T>
void SelfAttention<T>::backward_rows(const CRef<T>& x, const CRef<T>& dy, Index seq, std::span<const std::int32_t> rows,
                                     AttentionCache<T>& cache, Ref<T> dx) const {
  const Index n = x.rows(), c = x.cols(), d = c / heads, m = static_cast<Index>(rows.size());
  const T scale = T(1) / std::sqrt(T(d));
  MatMap<T> xq(cache.xq.data.data(), m, c), q(cache.q.data.data(), m, c);
  MatMap<T> kv(cache.kv.data.data(), n, 2 * c);
  MatMap<T> probs(cache.probs.data.data(), m * heads, seq);
  MatMap<T> ctx(cache.ctx.data.data(), m, c);
  MatMap<T> dctx = cache.dctx.view(m, c), dq = cache.dq.view(m, c), dxq = cache.dxq.view(m, c);  // (M, C)
  MatMap<T> dkv = cache.dqkv.view(n, 2 * c);  // (B*T, 2C): dk | dv
  MatMap<T> dp_all = cache.dprobs.view(1, seq);

  Ref<T> dctx_ref(dctx);
  output.backward(ctx, dy, &dctx_ref);
  // A sequence's keys and values get the sum over its query rows: the first
  // one assigns, the others add; sequences without a query row get zeros.
  Index done = 0;  // sequences [0, done) have their dk | dv rows
  for (Index i = 0; i < m; ++i) {
    const Index b = rows[i] / seq;
    const bool first = b >= done;
    if (first) {
      dkv.middleRows(done * seq, (b - done) * seq).setZero();
      done = b + 1;
    }
    for (Index h = 0; h < heads; ++h) {
      auto k = kv.block(b * seq, h * d, seq, d);
      auto v = kv.block(b * seq, c + h * d, seq, d);
      auto p = probs.row(i * heads + h);
      auto da = dctx.row(i).segment(h * d, d);  // (1, D)
      auto dp = dp_all.row(0);
      auto dk = dkv.block(b * seq, h * d, seq, d), dv = dkv.block(b * seq, c + h * d, seq, d);
      // a = p v  ⇒  dp = da vᵀ, dv = pᵀ da
      dp.noalias() = da * v.transpose();
      if (first)
        dv.noalias() = p.transpose() * da;
      else
        dv.noalias() += p.transpose() * da;
      // p = softmax(s) ⇒ ds = p ⊙ (dp − p·dp); s = q kᵀ·scale
      T dot = p.dot(dp);
      dp = (p.array() * (dp.array() - dot) * scale).matrix();
      dq.row(i).segment(h * d, d).noalias() = dp * k;
      if (first)
        dk.noalias() = dp.transpose() * q.row(i).segment(h * d, d);
      else
        dk.noalias() += dp.transpose() * q.row(i).segment(h * d, d);
    }
  }
  dkv.middleRows(done * seq, n - done * seq).setZero();
  // As in backward: the key bias gradient is exactly zero (softmax ignores it).
  Linear<T> kv_lin = projection_rows(qkv, c, 2 * c);
  MatMap<T> key_bias_grad = cache.key_bias_grad.view(1, c);
  key_bias_grad = kv_lin.bias.grad_row().segment(0, c);
  kv_lin.backward(x, dkv, &dx);
  kv_lin.bias.grad_row().segment(0, c) = key_bias_grad;
  Ref<T> dxq_ref(dxq);
  projection_rows(qkv, 0, c).backward(xq, dq, &dxq_ref);
  for (Index i = 0; i < m; ++i) dx.row(rows[i]) += dxq.row(i);
}

template struct SelfAttention<ZIBERT_REAL>;

}  // namespace zibert
