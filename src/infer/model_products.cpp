#include "zibert/infer/model_products.hpp"

namespace zibert {

ModelProducts::ModelProducts(const Model& model, Weights weights) {
  if (model.quantization)
    int8_ = std::make_unique<Int8Net>(model);
  else if (matmul_precision() == MatmulPrecision::bfloat16)
    bf16_ = std::make_unique<Bf16Net>(model.net, bf16_isa());
  else if (weights == Weights::packed)
    f32_ = std::make_unique<F32Net>(model.net);
}

const LinearProducts<float>& ModelProducts::get() const {
  if (int8_) return *int8_;
  if (bf16_) return *bf16_;
  if (f32_) return *f32_;
  return float_products<float>();
}

}  // namespace zibert
