// The bfloat16 inference path (--bf16): every Linear of the network gets a
// twin (Bf16Matrix) rounded and packed once, so a prediction's products do
// not pack the weights again at every pass. The rest of the pass runs as
// float32 inference does, its own products (attention's q·k and p·v, the
// embedding tables) at the process's precision.
#pragma once
#include <vector>

#include "zibert/infer/fast_forward.hpp"
#include "zibert/nn/gemm_bf16.hpp"

namespace zibert {

// The network must outlive it and its weights must not change.
class Bf16Net final : public LinearProducts<float> {
 public:
  explicit Bf16Net(const Bert<float>& net, Bf16Isa isa = bf16_isa());
  // y = x Wᵀ + b by lin's bfloat16 twin (Error when lin is not the network's).
  void apply(const Linear<float>& lin, const CRef<float>& x, Ref<float> y) const override;

 private:
  struct Twin {
    const float* weight;  // the float Linear's, which identifies it
    Bf16Matrix matrix;
  };
  std::vector<Twin> twins_;
};

}  // namespace zibert
