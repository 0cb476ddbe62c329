// The int8 inference path of a quantized model (zibert quantize): every
// Linear of its network gets an int8 twin (Int8Matrix) made from the file's
// ints and scales, and the inference pass (fast_forward.hpp) multiplies by
// the twins. What is not a Linear's product stays float32 on the
// dequantized weights: the embeddings and the first layer's tables,
// attention's q·k and p·v, LayerNorm, GELU, and the [CLS]-folded last
// layer's attention (its B rows are a sliver of the work).
#pragma once
#include <vector>

#include "zibert/infer/fast_forward.hpp"
#include "zibert/model/model.hpp"
#include "zibert/nn/qgemm.hpp"

namespace zibert {

// The model must outlive it and its weights must not change.
class Int8Net final : public LinearProducts<float> {
 public:
  // Throws unless model.quantization holds every Linear's weight.
  explicit Int8Net(const Model& model, Int8Isa isa = int8_isa());
  // y = x Wᵀ + b by lin's int8 twin (Error when lin is not one of the model's).
  void apply(const Linear<float>& lin, const CRef<float>& x, Ref<float> y) const override;
  Int8Isa isa() const { return isa_; }

 private:
  struct Twin {
    const float* weight;  // the float Linear's, which identifies it
    Int8Matrix matrix;
  };
  Int8Isa isa_;
  std::vector<Twin> twins_;
};

}  // namespace zibert
