// Inference with every Linear of the network packed once: each gets a twin
// Matrix (F32Matrix for float32, Bf16Matrix for --bf16's bfloat16) holding
// its weight in the product kernel's panels, so a prediction's products do
// not pack the weights again at every pass. The rest of the pass runs as
// float32 inference does, its own products (attention's q·k and p·v, the
// embedding tables) at the process's precision. F32Net gives the bits the
// unpacked products give.
#pragma once
#include <vector>

#include "zibert/infer/fast_forward.hpp"
#include "zibert/nn/gemm.hpp"
#include "zibert/nn/gemm_bf16.hpp"

namespace zibert {

// The network must outlive it and its weights must not change.
template <class Matrix>
class PackedNet final : public LinearProducts<float> {
 public:
  // Each Linear's Matrix(weight, rows, cols, args...).
  template <class... Args>
  explicit PackedNet(const Bert<float>& net, const Args&... args) {
    for (const Linear<float>* lin : network_linears<float>(net))
      twins_.push_back({lin->weight.value, Matrix(lin->weight.value, lin->weight.rows, lin->weight.cols, args...)});
  }
  // y = x Wᵀ + b by lin's twin (Error when lin is not the network's).
  void apply(const Linear<float>& lin, const CRef<float>& x, Ref<float> y) const override;

 private:
  struct Twin {
    const float* weight;  // the float Linear's, which identifies it
    Matrix matrix;
  };
  std::vector<Twin> twins_;
};

using F32Net = PackedNet<F32Matrix>;
using Bf16Net = PackedNet<Bf16Matrix>;

}  // namespace zibert
