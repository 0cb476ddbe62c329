#include "zibert/attention.hpp"

#include <omp.h>

#include <cmath>
#include <limits>

namespace zibert {

template <class T>
void SelfAttention<T>::forward(const CRef<T>& x, Index batch, Index seq, const std::uint8_t* key_valid,
                               AttentionCache<T>& cache, Ref<T> y) const {
  const Index n = batch * seq, c = x.cols(), d = c / heads;
  const Index width = tied ? 2 * c : 3 * c, k_off = tied ? 0 : c, v_off = tied ? c : 2 * c;
  const T scale = T(1) / std::sqrt(T(d));
  MatMap<T> qkv_out = cache.qkv.view(n, width);         // (B*T, 3C) or (B*T, 2C)
  MatMap<T> probs = cache.probs.view(batch * heads * seq, seq);  // (B*H*T, T)
  MatMap<T> ctx = cache.ctx.view(n, c);                 // (B*T, C)
  qkv.forward(x, qkv_out);

  // Threads only pay off beyond a few thousand multiply-adds per block.
  const bool parallel = batch * heads * seq * seq * d > 65536;
#pragma omp parallel for collapse(2) schedule(static) if (parallel)
  for (Index b = 0; b < batch; ++b)
    for (Index h = 0; h < heads; ++h) {
      auto q = qkv_out.block(b * seq, h * d, seq, d);          // (T, D)
      auto k = qkv_out.block(b * seq, k_off + h * d, seq, d);  // (T, D)
      auto v = qkv_out.block(b * seq, v_off + h * d, seq, d);  // (T, D)
      auto p = probs.block((b * heads + h) * seq, 0, seq, seq);  // (T, T)
      p.noalias() = (q * k.transpose()) * scale;
      const std::uint8_t* valid = key_valid + b * seq;
      for (Index i = 0; i < seq; ++i) {
        T m = -std::numeric_limits<T>::infinity();
        for (Index j = 0; j < seq; ++j)
          if (valid[j]) m = std::max(m, p(i, j));
        T sum = 0;
        for (Index j = 0; j < seq; ++j) {
          T e = valid[j] ? std::exp(p(i, j) - m) : T(0);
          p(i, j) = e;
          sum += e;
        }
        p.row(i) /= sum;
      }
      ctx.block(b * seq, h * d, seq, d).noalias() = p * v;
    }
  output.forward(ctx, y);
}

template <class T>
void SelfAttention<T>::backward(const CRef<T>& x, const CRef<T>& dy, Index batch, Index seq,
                                AttentionCache<T>& cache, Ref<T> dx) const {
  const Index n = batch * seq, c = x.cols(), d = c / heads;
  const Index width = tied ? 2 * c : 3 * c, k_off = tied ? 0 : c, v_off = tied ? c : 2 * c;
  const T scale = T(1) / std::sqrt(T(d));
  MatMap<T> qkv_out(cache.qkv.data.data(), n, width);
  MatMap<T> probs(cache.probs.data.data(), batch * heads * seq, seq);
  MatMap<T> ctx(cache.ctx.data.data(), n, c);
  MatMap<T> dctx = cache.dctx.view(n, c);      // (B*T, C)
  MatMap<T> dqkv = cache.dqkv.view(n, width);  // (B*T, 3C) or (B*T, 2C)
  const Index threads = omp_get_max_threads();
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
      auto p = probs.block((b * heads + h) * seq, 0, seq, seq);
      auto da = dctx.block(b * seq, h * d, seq, d);
      auto dp = dprobs_all.block(omp_get_thread_num() * seq, 0, seq, seq);
      // a = p v  ⇒  dp = da vᵀ, dv = pᵀ da
      dp.noalias() = da * v.transpose();
      dqkv.block(b * seq, v_off + h * d, seq, d).noalias() = p.transpose() * da;
      // p = softmax(s)  ⇒  ds = p ⊙ (dp − Σ_j p dp); s = q kᵀ·scale
      for (Index i = 0; i < seq; ++i) {
        T dot = p.row(i).dot(dp.row(i));
        dp.row(i) = (p.row(i).array() * (dp.row(i).array() - dot) * scale).matrix();
      }
      dqkv.block(b * seq, h * d, seq, d).noalias() = dp * k;
      if (tied)  // s = q qᵀ·scale: q gets both halves
        dqkv.block(b * seq, h * d, seq, d).noalias() += dp.transpose() * q;
      else
        dqkv.block(b * seq, k_off + h * d, seq, d).noalias() = dp.transpose() * q;
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

template struct SelfAttention<float>;
template struct SelfAttention<double>;

}  // namespace zibert
