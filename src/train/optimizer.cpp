#include "zibert/train/optimizer.hpp"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <type_traits>

namespace zibert {

double lr_multiplier(std::int64_t step, std::int64_t warmup, std::int64_t total) {
  const std::int64_t k = step + 1;  // 1-based update number
  if (k <= warmup) return double(k) / double(warmup);
  return std::max(0.0, double(total - k + 1) / double(total - warmup + 1));
}

template <class T>
double clip_grad_norm(AlignedVector<T>& grads, double max_norm) {
  double sum = 0;
  for (T g : grads) sum += double(g) * double(g);
  double norm = std::sqrt(sum);
  if (max_norm > 0) {
    double coef = max_norm / (norm + 1e-6);
    if (coef < 1.0)
      for (T& g : grads) g = T(double(g) * coef);
  }
  return norm;
}

template <class T>
AdamW<T>::AdamW(const AdamWConfig& config, const std::vector<TensorInfo>& layout) : config_(config) {
  std::size_t n = layout.empty() ? 0 : layout.back().offset + layout.back().size;
  std::vector<TensorInfo> by_offset = layout;
  std::sort(by_offset.begin(), by_offset.end(),
            [](const TensorInfo& a, const TensorInfo& b) { return a.offset < b.offset; });
  for (const TensorInfo& t : by_offset) {
    if (!t.decay || t.size == 0) continue;
    const auto first = static_cast<std::ptrdiff_t>(t.offset), last = first + static_cast<std::ptrdiff_t>(t.size);
    if (!decayed_.empty() && decayed_.back().second >= first)
      decayed_.back().second = std::max(decayed_.back().second, last);
    else
      decayed_.emplace_back(first, last);
  }
  m_.assign(n, T(0));
  v_.assign(n, T(0));
}

namespace {

// AdamW's update of elements [lo, hi), each on its own, so the loop
// vectorises (this file compiles with -fno-math-errno: std::sqrt has no
// scalar errno fallback; the square roots are the same, correctly rounded).
template <bool kDecayed, class T>
void adamw_update(std::ptrdiff_t lo, std::ptrdiff_t hi, T* __restrict p, const T* __restrict gr, T* __restrict m,
                  T* __restrict v, T decay, T tb1, T tb2, T tsb2, T eps, T step_size) {
#pragma omp simd
  for (std::ptrdiff_t i = lo; i < hi; ++i) {
    T g = gr[i];
    if constexpr (kDecayed) p[i] *= decay;
    m[i] = tb1 * m[i] + (T(1) - tb1) * g;
    v[i] = tb2 * v[i] + (T(1) - tb2) * g * g;
    T denom = std::sqrt(v[i]) / tsb2 + eps;
    p[i] -= step_size * m[i] / denom;
  }
}

}  // namespace

template <class T>
void AdamW<T>::step(AlignedVector<T>& params, const AlignedVector<T>& grads, double lr) {
  ++t_;
  const double b1 = config_.beta1, b2 = config_.beta2;
  const double bias1 = 1.0 - std::pow(b1, double(t_));
  const double sqrt_bias2 = std::sqrt(1.0 - std::pow(b2, double(t_)));
  const T step_size = T(lr / bias1);
  const T decay = T(1.0 - lr * config_.weight_decay);
  const T eps = T(config_.eps), tb1 = T(b1), tb2 = T(b2), tsb2 = T(sqrt_bias2);
  const std::ptrdiff_t n = static_cast<std::ptrdiff_t>(params.size());
  T* p = params.data();
  const T* gr = grads.data();
  T* m = m_.data();
  T* v = v_.data();
  auto update = [&](std::ptrdiff_t lo, std::ptrdiff_t hi, auto decayed) {
    adamw_update<decltype(decayed)::value>(lo, hi, p, gr, m, v, decay, tb1, tb2, tsb2, eps, step_size);
  };
  // Each thread takes one contiguous share, as a static schedule would, and
  // walks the decay ranges that cross it.
#pragma omp parallel if (n > 65536)
  {
    const std::ptrdiff_t threads = omp_get_num_threads(), id = omp_get_thread_num();
    const std::ptrdiff_t a = n * id / threads, b = n * (id + 1) / threads;
    auto r = std::lower_bound(decayed_.begin(), decayed_.end(), a,
                              [](const std::pair<std::ptrdiff_t, std::ptrdiff_t>& range, std::ptrdiff_t at) {
                                return range.second <= at;
                              });
    for (std::ptrdiff_t i = a; i < b;) {
      if (r != decayed_.end() && r->first <= i) {
        const std::ptrdiff_t hi = std::min(b, r->second);
        update(i, hi, std::true_type{});
        i = hi;
        ++r;
      } else {
        const std::ptrdiff_t hi = r != decayed_.end() ? std::min(b, r->first) : b;
        update(i, hi, std::false_type{});
        i = hi;
      }
    }
  }
}

template double clip_grad_norm<float>(AlignedVector<float>&, double);
template double clip_grad_norm<double>(AlignedVector<double>&, double);
template class AdamW<float>;
template class AdamW<double>;

}  // namespace zibert
