// The building blocks of the encoder. Each layer is a plain struct of parameter
// views; forward is const and fills its outputs/cache; backward accumulates (+=)
// into parameter gradients and writes the input gradient.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "zibert/nn/tensor.hpp"

namespace zibert {

// y = x Wᵀ + b.  W (out, in), b (out).
template <class T>
struct Linear {
  Param<T> weight;  // (out, in)
  Param<T> bias;    // (out, 1)
  void forward(const CRef<T>& x /*(N,in)*/, Ref<T> y /*(N,out)*/) const;
  // Differentiates y = x Wᵀ + b: dW += dyᵀ x, db += Σ_rows dy, dx = dy W
  // (dx += dy W when accumulate). Pass dx == nullptr to skip it.
  void backward(const CRef<T>& x, const CRef<T>& dy, Ref<T>* dx, bool accumulate = false) const;
};

// y = (x − mean) / sqrt(var + eps) · γ + β over each row.
template <class T>
struct LayerNorm {
  Param<T> gamma;  // (C, 1)
  Param<T> beta;   // (C, 1)
  T eps = T(1e-12);
  // xhat (N,C) and rstd (N,1) are the cache backward needs.
  void forward(const CRef<T>& x, Ref<T> y, Ref<T> xhat, Ref<T> rstd) const;
  // y = LayerNorm(x + a), keeping nothing for backward (inference): each row
  // summed, normalised and scaled while it is in L1, instead of three passes
  // over the matrix (the sum, xhat, y). The same operations in the same order
  // as forward on x + a.
  void forward_sum(const CRef<T>& x, const CRef<T>& a, Ref<T> y) const;
  // y = xhat·γ + β: forward's output again from the xhat it kept (training
  // recomputes it in backward instead of holding it), to the bit.
  void scale(const CRef<T>& xhat, Ref<T> y) const;
  // Differentiates y = xhat·γ + β, xhat = (x − μ)·rstd: writes dx.
  // scratch: reused between calls, so the step does not allocate.
  void backward(const CRef<T>& dy, const CRef<T>& xhat, const CRef<T>& rstd, Ref<T> dx, Buffer<T>& scratch) const;
};

// GELU, exact erf form: y = x · Φ(x).
template <class T> void gelu_forward(const CRef<T>& x, Ref<T> y);
// Differentiates y = x·Φ(x): dx = dy · (Φ(x) + x·φ(x)).
template <class T> void gelu_backward(const CRef<T>& x, const CRef<T>& dy, Ref<T> dx);

// Inverted dropout with masks from a counter-based hash of (seed, step, site,
// element), so the same seed gives the same masks whatever the thread count.
struct DropoutRng {
  std::uint64_t seed = 0;
  std::uint64_t step = 0;
  double p = 0.0;
  // Sound-only tokens (train --sound-only P, with the reading channel): the
  // share of tokens whose own embedding is left out of the sum, so that
  // they are read by their readings alone (a character never taught as a
  // typo is then heard, not only seen).
  double sound_only = 0.0;
};
// A drawn mask, one byte per element: 0 with probability p (dropped), else
// 1 (kept, scaled by 1/(1−p) where it is applied). Backward applies the mask
// forward drew; a byte holds it in a quarter of a float mask's memory.
struct DropoutMask {
  std::vector<std::uint8_t> keep;  // (rows, cols), row-major
  Index rows = 0, cols = 0;
  double p = 0;
  // x (rows, cols) *= mask: each element times 0 or 1/(1−p).
  void apply(Ref<float> x) const;
  void apply(Ref<double> x) const;
};
// Draws (rows, cols) into mask. Row i draws as row first_row + i, so a batch
// split into parts gets the masks of the whole.
void dropout_mask(const DropoutRng& rng, std::uint64_t site, Index rows, Index cols, DropoutMask& mask,
                  std::uint64_t first_row = 0);
// The same for some rows only: row i draws as row first_row + rows[i], so a
// layer that computes only those rows (the [CLS] ones, the masked-LM head's)
// gets their masks from the whole.
void dropout_mask(const DropoutRng& rng, std::uint64_t site, Index cols, DropoutMask& mask, std::uint64_t first_row,
                  std::span<const std::int32_t> rows);

// A row that belongs to none of the labels (train --outliers: outlier
// exposure, Hendrycks et al. 2019): its target is the uniform q = 1/K.
inline constexpr std::int32_t kNoLabel = -1;

// Mean softmax cross-entropy over rows; writes probs and returns the loss.
// smoothing ε (label smoothing, Szegedy et al. 2016) takes the targets as
// q = (1 − ε)·onehot + ε/K instead of the one-hot label; ε = 0 is plain
// cross-entropy, computed as it always was. A row labelled kNoLabel has the
// uniform target whatever ε.
template <class T>
T cross_entropy_forward(const CRef<T>& logits /*(B,K)*/, const std::int32_t* labels, Ref<T> probs /*(B,K)*/,
                        double smoothing = 0);
// Differentiates loss = −mean Σ q log softmax(logits): dlogits = (p − q)/B.
template <class T>
void cross_entropy_backward(const CRef<T>& probs, const std::int32_t* labels, Ref<T> dlogits, double smoothing = 0);

// Knowledge distillation (Hinton et al. 2015): a teacher's distribution
// p (B, K) at temperature T, the student's q_T = softmax(z/T), and where a
// row has a gold label, α times its cross-entropy at temperature 1:
//   loss = mean over rows of T²·KL(p ‖ q_T) + α·[gold]·(−log softmax(z)_gold).
// The T² keeps the soft part's gradient on the scale of the hard one's. A
// row of no gold label carries kNoGold. probs gets softmax(z).
inline constexpr std::int32_t kNoGold = -2;
struct SoftTargets {
  std::vector<float> probs;  // (B*K) the teacher's p at the temperature, row-major
  double temperature = 1, alpha = 0;
};
template <class T>
T distillation_forward(const CRef<T>& logits /*(B,K)*/, const SoftTargets& soft, const std::int32_t* labels,
                       Ref<T> probs /*(B,K)*/);
// Differentiates it: dlogits = (T·(q_T − p) + α·[gold]·(softmax(z) − onehot)) / B.
template <class T>
void distillation_backward(const CRef<T>& logits, const SoftTargets& soft, const std::int32_t* labels,
                           const CRef<T>& probs, Ref<T> dlogits);

// Binary cross-entropy of one sigmoid per label, summed over the K labels and
// averaged over the B rows (a multi-label head): probs = σ(logits), targets
// (B*K) are 0 or 1, row-major. Computed from the logits, stable for any size.
template <class T>
T binary_cross_entropy_forward(const CRef<T>& logits /*(B,K)*/, const std::uint8_t* targets, Ref<T> probs /*(B,K)*/);
// Differentiates it: dlogits = (σ(logits) − targets)/B.
template <class T>
void binary_cross_entropy_backward(const CRef<T>& probs, const std::uint8_t* targets, Ref<T> dlogits);

// Row-wise softmax in place.
template <class T> void softmax_rows(Ref<T> x);
// Element-wise logistic sigmoid in place.
template <class T> void sigmoid(Ref<T> x);

}  // namespace zibert
