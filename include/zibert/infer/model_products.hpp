// The Linear products an inference pass over a model runs by, chosen once
// per model: a quantized model's int8 twins (Int8Net) on the fastest path
// this CPU has; a float one's bfloat16 twins (Bf16Net) when the process's
// matmul precision is bfloat16; else its float32 twins packed once (F32Net:
// the same bits as the network's own products, for one more copy of the
// Linear weights in memory), or, with Weights::in_place, the network's
// weights as they are (what training's dev scoring uses, beside the
// training state).
#pragma once
#include <memory>

#include "zibert/infer/fast_forward.hpp"
#include "zibert/infer/int8_net.hpp"
#include "zibert/infer/packed_net.hpp"
#include "zibert/model/model.hpp"

namespace zibert {

class ModelProducts {
 public:
  enum class Weights { packed, in_place };
  // The model's weights must not change while its products are in use.
  ModelProducts(const Model& model, Weights weights);
  const LinearProducts<float>& get() const;
  const Int8Net* int8() const { return int8_.get(); }

 private:
  std::unique_ptr<Int8Net> int8_;
  std::unique_ptr<Bf16Net> bf16_;
  std::unique_ptr<F32Net> f32_;
};

}  // namespace zibert
