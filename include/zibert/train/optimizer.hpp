// AdamW over the flat parameter buffer, the learning-rate schedule, and
// gradient-norm clipping — all as PyTorch computes them.
#pragma once
#include <cstdint>
#include <utility>
#include <vector>

#include "zibert/model/bert.hpp"

namespace zibert {

struct AdamWConfig {
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0.01;  // decoupled, on matrices only
  double clip_norm = 1.0;      // max global gradient norm; <= 0 disables
};

// Linear warmup over `warmup` updates, then linear decay: with k = step + 1
// (step is 0-based), k/warmup while k <= warmup, then
// (total − k + 1)/(total − warmup + 1): the peak is reached once, and the last
// update still moves the weights.
double lr_multiplier(std::int64_t step, std::int64_t warmup, std::int64_t total);

// Scales grads so their global L2 norm is at most max_norm (PyTorch's
// clip_grad_norm_). Returns the norm before clipping.
template <class T> double clip_grad_norm(AlignedVector<T>& grads, double max_norm);

template <class T>
class AdamW {
 public:
  AdamW(const AdamWConfig& config, const std::vector<TensorInfo>& layout);
  // One update with learning rate lr (already scheduled).
  void step(AlignedVector<T>& params, const AlignedVector<T>& grads, double lr);
  std::int64_t steps() const { return t_; }
  const AdamWConfig& config() const { return config_; }

  // State for checkpoints.
  AlignedVector<T>& m() { return m_; }
  AlignedVector<T>& v() { return v_; }
  void set_steps(std::int64_t t) { t_ = t; }

 private:
  AdamWConfig config_;
  // The element ranges [first, second) where weight decay applies, ascending
  // and apart: a list per tensor, not a flag per element (a byte per
  // parameter is 100 MB at bert-base's shape, read every step).
  std::vector<std::pair<std::ptrdiff_t, std::ptrdiff_t>> decayed_;
  AlignedVector<T> m_, v_;             // first and second moments, as long as params
  std::int64_t t_ = 0;
};

}  // namespace zibert
