#include "zibert/nn/layers.hpp"

#include <omp.h>

#include <cmath>
#include <utility>
#include <unsupported/Eigen/SpecialFunctions>

#include "zibert/nn/gemm.hpp"
#include "zibert/base/error.hpp"
#include "zibert/base/random.hpp"

namespace zibert {

template <class T>
void Linear<T>::forward(const CRef<T>& x, Ref<T> y) const {
  matmul<T>(x, false, weight.w(), true, y, false, bias.value);
}

template <class T>
void Linear<T>::backward(const CRef<T>& x, const CRef<T>& dy, Ref<T>* dx, bool accumulate) const {
  matmul<T>(dy, true, x, false, weight.g(), true);
  bias.grad_row() += dy.colwise().sum();
  if (dx != nullptr) matmul<T>(dy, false, weight.w(), false, *dx, accumulate);
}

namespace {

// A row's mean and 1 / sqrt(variance + eps): every LayerNorm pass computes
// them this one way, so the training and inference passes agree to the bit.
template <class Row, class T>
std::pair<T, T> row_moments(const Row& row, T eps) {
  const T c = T(row.size());
  const T mean = row.sum() / c;
  const T var = (row.array() - mean).square().sum() / c;
  return {mean, T(1) / std::sqrt(var + eps)};
}

// y = xhat·γ + β for one row: forward and scale write the same bits.
template <class XRow, class G, class YRow>
void scale_row(const XRow& xhat, const G& g, const G& b, YRow&& y) {
  y = xhat.array() * g.array() + b.array();
}

}  // namespace

template <class T>
void LayerNorm<T>::forward(const CRef<T>& x, Ref<T> y, Ref<T> xhat, Ref<T> rstd) const {
  const Index n = x.rows(), c = x.cols();
  const RowMap<T> g = gamma.row(), b = beta.row();
#pragma omp parallel for schedule(static) if (n * c > 16384)
  for (Index i = 0; i < n; ++i) {
    const auto [mean, r] = row_moments(x.row(i), eps);
    rstd(i, 0) = r;
    xhat.row(i) = (x.row(i).array() - mean) * r;
    scale_row(xhat.row(i), g, b, y.row(i));
  }
}

template <class T>
void LayerNorm<T>::scale(const CRef<T>& xhat, Ref<T> y) const {
  const Index n = xhat.rows(), c = xhat.cols();
  const RowMap<T> g = gamma.row(), b = beta.row();
#pragma omp parallel for schedule(static) if (n * c > 16384)
  for (Index i = 0; i < n; ++i) scale_row(xhat.row(i), g, b, y.row(i));
}

template <class T>
void LayerNorm<T>::forward_sum(const CRef<T>& x, const CRef<T>& a, Ref<T> y) const {
  const Index n = x.rows(), c = x.cols();
  const RowMap<T> g = gamma.row(), b = beta.row();
#pragma omp parallel for schedule(static) if (n * c > 16384)
  for (Index i = 0; i < n; ++i) {
    auto row = y.row(i);
    row = x.row(i) + a.row(i);
    const auto [mean, r] = row_moments(row, eps);
    row = (((row.array() - mean) * r) * g.array() + b.array()).matrix();
  }
}

template <class T>
void LayerNorm<T>::backward(const CRef<T>& dy, const CRef<T>& xhat, const CRef<T>& rstd, Ref<T> dx,
                            Buffer<T>& scratch) const {
  const Index n = dy.rows(), c = dy.cols();
  // Parameter gradients: a fixed-order reduction over rows keeps results deterministic.
  gamma.grad_row() += (dy.array() * xhat.array()).colwise().sum().matrix();
  beta.grad_row() += dy.colwise().sum();
  const RowMap<T> g = gamma.row();
  // One row of dxhat per thread, each starting on Eigen's largest alignment
  // (64 bytes with AVX-512, 32 with AVX2: the buffer's, and the width is a
  // multiple of 16 elements), where a temporary per row would start: the sums
  // below then run in the same order, without allocating in the step.
  const Index width = (c + 15) / 16 * 16;
  MatMap<T> rows = scratch.view(omp_get_max_threads(), width);  // (threads, C rounded up)
#pragma omp parallel for schedule(static) if (n * c > 16384)
  for (Index i = 0; i < n; ++i) {
    Eigen::Map<Eigen::Array<T, 1, Eigen::Dynamic>, Eigen::AlignedMax> dxhat(&rows(omp_get_thread_num(), 0), c);
    dxhat = dy.row(i).array() * g.array();
    T mean_d = dxhat.sum() / T(c);
    T mean_dx = (dxhat * xhat.row(i).array()).sum() / T(c);
    dx.row(i) = (dxhat - mean_d - xhat.row(i).array() * mean_dx) * rstd(i, 0);
  }
}

template <class T>
void gelu_forward(const CRef<T>& x, Ref<T> y) {
  // Eigen's erf: vectorised for float (a rational approximation within a couple
  // of ulp), std::erf for double.
  const T inv_sqrt2 = T(0.70710678118654752440);
  const Index n = x.rows();
#pragma omp parallel for schedule(static) if (x.size() > 65536)
  for (Index i = 0; i < n; ++i)
    y.row(i) = (T(0.5) * x.row(i).array() * (T(1) + (x.row(i).array() * inv_sqrt2).erf())).matrix();
}

template <class T>
void gelu_backward(const CRef<T>& x, const CRef<T>& dy, Ref<T> dx) {
  const T inv_sqrt2 = T(0.70710678118654752440);
  const T inv_sqrt_2pi = T(0.39894228040143267794);
  const Index n = x.rows();
#pragma omp parallel for schedule(static) if (x.size() > 65536)
  // dx = dy · (cdf + x·pdf), cdf = ½(1 + erf(x/√2)), pdf = e^(−x²/2)/√(2π): one expression, evaluated once per element.
  for (Index i = 0; i < n; ++i)
    dx.row(i) = (dy.row(i).array() * (T(0.5) * (T(1) + (x.row(i).array() * inv_sqrt2).erf()) +
                                      x.row(i).array() * (inv_sqrt_2pi * (T(-0.5) * x.row(i).array().square()).exp())))
                    .matrix();
}

// Not templates: compiled once, in the float library, which the tests' double
// library links against.
#ifndef ZIBERT_F64
namespace {

// The mask's row i draws as row row_of(i) of the whole.
template <class RowOf>
void fill_dropout_mask(const DropoutRng& rng, std::uint64_t site, Index rows, Index cols, DropoutMask& mask,
                       RowOf row_of) {
  const std::uint64_t base = splitmix64(splitmix64(rng.seed ^ splitmix64(rng.step)) ^ site);
  mask.rows = rows;
  mask.cols = cols;
  mask.p = rng.p;
  if (mask.keep.size() < static_cast<std::size_t>(rows * cols)) mask.keep.resize(static_cast<std::size_t>(rows * cols));
  std::uint8_t* keep = mask.keep.data();
#pragma omp parallel for schedule(static) if (rows * cols > 16384)
  for (Index i = 0; i < rows; ++i)
    for (Index j = 0; j < cols; ++j) {
      std::uint64_t h = splitmix64(base + row_of(i) * static_cast<std::uint64_t>(cols) + static_cast<std::uint64_t>(j));
      double u = static_cast<double>(h >> 11) * 0x1.0p-53;  // uniform in [0, 1)
      keep[i * cols + j] = u < rng.p ? 0 : 1;
    }
}

}  // namespace

void dropout_mask(const DropoutRng& rng, std::uint64_t site, Index rows, Index cols, DropoutMask& mask,
                  std::uint64_t first_row) {
  fill_dropout_mask(rng, site, rows, cols, mask,
                    [first_row](Index i) { return first_row + static_cast<std::uint64_t>(i); });
}

void dropout_mask(const DropoutRng& rng, std::uint64_t site, Index cols, DropoutMask& mask, std::uint64_t first_row,
                  std::span<const std::int32_t> rows) {
  fill_dropout_mask(rng, site, static_cast<Index>(rows.size()), cols, mask,
                    [first_row, rows](Index i) { return first_row + static_cast<std::uint64_t>(rows[i]); });
}
#endif

// Each library defines the overload of its ZIBERT_REAL.
void DropoutMask::apply(Ref<ZIBERT_REAL> x) const {
  using T = ZIBERT_REAL;
  if (x.rows() != rows || x.cols() != cols) throw Error("DropoutMask::apply: the matrix is not the mask's shape");
  const T scale = T(1) / T(1 - p);
  const std::uint8_t* k = keep.data();
#pragma omp parallel for schedule(static) if (rows * cols > 16384)
  for (Index i = 0; i < rows; ++i)
    for (Index j = 0; j < cols; ++j) x(i, j) *= T(k[i * cols + j]) * scale;
}

template <class T>
void softmax_rows(Ref<T> x) {
  for (Index i = 0; i < x.rows(); ++i) {
    T m = x.row(i).maxCoeff();
    x.row(i) = (x.row(i).array() - m).exp();
    x.row(i) /= x.row(i).sum();
  }
}

template <class T>
T cross_entropy_forward(const CRef<T>& logits, const std::int32_t* labels, Ref<T> probs, double smoothing) {
  probs = logits;
  softmax_rows<T>(probs);
  const T eps = T(smoothing), uniform = eps / T(logits.cols());
  T loss = 0;
  for (Index b = 0; b < logits.rows(); ++b) {
    T m = logits.row(b).maxCoeff();
    T lse = m + std::log((logits.row(b).array() - m).exp().sum());
    // −Σ q log p = lse − Σ q z, with Σ q = 1.
    if (labels[b] == kNoLabel)
      loss += lse - logits.row(b).sum() / T(logits.cols());
    else if (smoothing == 0)
      loss += lse - logits(b, labels[b]);
    else
      loss += lse - (T(1) - eps) * logits(b, labels[b]) - uniform * logits.row(b).sum();
  }
  return loss / T(logits.rows());
}

template <class T>
void cross_entropy_backward(const CRef<T>& probs, const std::int32_t* labels, Ref<T> dlogits, double smoothing) {
  const T inv_b = T(1) / T(probs.rows()), eps = T(smoothing), uniform = eps / T(probs.cols());
  if (smoothing == 0)
    dlogits = probs * inv_b;
  else
    dlogits = (probs.array() - uniform).matrix() * inv_b;
  for (Index b = 0; b < probs.rows(); ++b)
    if (labels[b] == kNoLabel)
      dlogits.row(b) = (probs.row(b).array() - T(1) / T(probs.cols())).matrix() * inv_b;
    else
      dlogits(b, labels[b]) -= (smoothing == 0 ? T(1) : T(1) - eps) * inv_b;
}

template <class T>
void sigmoid(Ref<T> x) {
  // σ(z) = 1/(1 + e^−z), from e^−|z| so that nothing overflows.
  x = x.unaryExpr([](T z) {
    const T e = std::exp(-std::abs(z));
    return z >= 0 ? T(1) / (T(1) + e) : e / (T(1) + e);
  });
}

template <class T>
T binary_cross_entropy_forward(const CRef<T>& logits, const std::uint8_t* targets, Ref<T> probs) {
  probs = logits;
  sigmoid<T>(probs);
  const Index k = logits.cols();
  T loss = 0;
  for (Index b = 0; b < logits.rows(); ++b)
    for (Index j = 0; j < k; ++j) {
      // −[y log σ(z) + (1−y) log(1−σ(z))] = max(z, 0) − y·z + log(1 + e^−|z|)
      const T z = logits(b, j);
      loss += std::max(z, T(0)) - (targets[b * k + j] ? z : T(0)) + std::log1p(std::exp(-std::abs(z)));
    }
  return loss / T(logits.rows());
}

template <class T>
void binary_cross_entropy_backward(const CRef<T>& probs, const std::uint8_t* targets, Ref<T> dlogits) {
  const T inv_b = T(1) / T(probs.rows());
  const Index k = probs.cols();
  for (Index b = 0; b < probs.rows(); ++b)
    for (Index j = 0; j < k; ++j) dlogits(b, j) = (probs(b, j) - T(targets[b * k + j] ? 1 : 0)) * inv_b;
}

namespace {
// Row b of softmax(z/T) into q (K), and its log into logq.
template <class T>
void tempered_row(const CRef<T>& logits, Index b, T temperature, T* q, T* logq) {
  const Index k = logits.cols();
  T m = logits(b, 0);
  for (Index j = 1; j < k; ++j) m = std::max(m, logits(b, j));
  T sum = 0;
  for (Index j = 0; j < k; ++j) sum += q[j] = std::exp((logits(b, j) - m) / temperature);
  const T log_sum = std::log(sum);
  for (Index j = 0; j < k; ++j) {
    q[j] /= sum;
    logq[j] = (logits(b, j) - m) / temperature - log_sum;
  }
}
}  // namespace

template <class T>
T distillation_forward(const CRef<T>& logits, const SoftTargets& soft, const std::int32_t* labels, Ref<T> probs) {
  const Index rows = logits.rows(), k = logits.cols();
  if (soft.probs.size() != static_cast<std::size_t>(rows * k)) throw Error("a distillation batch needs B×K soft targets");
  const T t = T(soft.temperature), alpha = T(soft.alpha);
  probs = logits;
  softmax_rows<T>(probs);
  std::vector<T> q(static_cast<std::size_t>(k)), logq(q.size());
  T loss = 0;
  for (Index b = 0; b < rows; ++b) {
    tempered_row<T>(logits, b, t, q.data(), logq.data());
    T kl = 0;
    for (Index j = 0; j < k; ++j) {
      const T p = T(soft.probs[static_cast<std::size_t>(b * k + j)]);
      if (p > 0) kl += p * (std::log(p) - logq[static_cast<std::size_t>(j)]);
    }
    loss += t * t * kl;
    if (labels[b] != kNoGold) {
      tempered_row<T>(logits, b, T(1), q.data(), logq.data());
      loss -= alpha * logq[static_cast<std::size_t>(labels[b])];
    }
  }
  return loss / T(rows);
}

template <class T>
void distillation_backward(const CRef<T>& logits, const SoftTargets& soft, const std::int32_t* labels,
                           const CRef<T>& probs, Ref<T> dlogits) {
  const Index rows = logits.rows(), k = logits.cols();
  const T t = T(soft.temperature), alpha = T(soft.alpha), inv_b = T(1) / T(rows);
  std::vector<T> q(static_cast<std::size_t>(k)), logq(q.size());
  for (Index b = 0; b < rows; ++b) {
    tempered_row<T>(logits, b, t, q.data(), logq.data());
    for (Index j = 0; j < k; ++j)
      dlogits(b, j) = t * (q[static_cast<std::size_t>(j)] - T(soft.probs[static_cast<std::size_t>(b * k + j)])) * inv_b;
    if (labels[b] != kNoGold) {
      dlogits.row(b) += alpha * inv_b * probs.row(b);
      dlogits(b, labels[b]) -= alpha * inv_b;
    }
  }
}

#define ZIBERT_INSTANTIATE(T)                                                                   \
  template struct Linear<T>;                                                                    \
  template struct LayerNorm<T>;                                                                 \
  template void gelu_forward<T>(const CRef<T>&, Ref<T>);                                        \
  template void gelu_backward<T>(const CRef<T>&, const CRef<T>&, Ref<T>);                       \
  template void softmax_rows<T>(Ref<T>);                                                        \
  template T cross_entropy_forward<T>(const CRef<T>&, const std::int32_t*, Ref<T>, double);     \
  template void cross_entropy_backward<T>(const CRef<T>&, const std::int32_t*, Ref<T>, double); \
  template void sigmoid<T>(Ref<T>);                                                             \
  template T binary_cross_entropy_forward<T>(const CRef<T>&, const std::uint8_t*, Ref<T>);      \
  template void binary_cross_entropy_backward<T>(const CRef<T>&, const std::uint8_t*, Ref<T>);              \
  template T distillation_forward<T>(const CRef<T>&, const SoftTargets&, const std::int32_t*, Ref<T>);      \
  template void distillation_backward<T>(const CRef<T>&, const SoftTargets&, const std::int32_t*, const CRef<T>&, Ref<T>);
ZIBERT_INSTANTIATE(ZIBERT_REAL)
#undef ZIBERT_INSTANTIATE

}  // namespace zibert
