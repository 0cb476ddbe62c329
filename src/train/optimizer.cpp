#include "zibert/train/optimizer.hpp"

#include <algorithm>
#include <cmath>

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
  decay_.assign(n, 0);
  for (const TensorInfo& t : layout)
    if (t.decay) std::fill_n(decay_.begin() + static_cast<std::ptrdiff_t>(t.offset), t.size, 1);
  m_.assign(n, T(0));
  v_.assign(n, T(0));
}

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
#pragma omp parallel for schedule(static) if (n > 65536)
  for (std::ptrdiff_t i = 0; i < n; ++i) {
    T g = grads[i];
    if (decay_[i]) params[i] *= decay;
    m_[i] = tb1 * m_[i] + (T(1) - tb1) * g;
    v_[i] = tb2 * v_[i] + (T(1) - tb2) * g * g;
    T denom = std::sqrt(v_[i]) / tsb2 + eps;
    params[i] -= step_size * m_[i] / denom;
  }
}

template double clip_grad_norm<float>(AlignedVector<float>&, double);
template double clip_grad_norm<double>(AlignedVector<double>&, double);
template class AdamW<float>;
template class AdamW<double>;

}  // namespace zibert
