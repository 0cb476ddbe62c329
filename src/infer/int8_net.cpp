#include "zibert/infer/int8_net.hpp"

#include <omp.h>

#include "zibert/base/error.hpp"

namespace zibert {

Int8Net::Int8Net(const Model& model, Int8Isa isa) : isa_(isa) {
  if (!model.quantization) throw Error("the int8 path needs a quantized model (zibert quantize)");
  const Bert<float>& net = model.net;
  for (const Linear<float>* lin : network_linears<float>(net)) {
    // The layout's tensors that make up this weight: one, or query, key and
    // value stacked (the fused projection).
    const auto first = static_cast<std::size_t>(lin->weight.value - net.values());
    const auto size = static_cast<std::size_t>(lin->weight.rows * lin->weight.cols);
    std::vector<std::int8_t> values;
    std::vector<float> scales;
    for (const TensorInfo& t : net.layout()) {
      if (t.offset < first || t.offset >= first + size) continue;
      auto it = model.quantization->tensors.find(t.name);
      if (it == model.quantization->tensors.end()) throw Error("the quantized model has no int8 " + t.name);
      values.insert(values.end(), it->second.values.begin(), it->second.values.end());
      scales.insert(scales.end(), it->second.scales.begin(), it->second.scales.end());
    }
    if (values.size() != size) throw Error("the quantized model's tensors do not cover a Linear's weight");
    twins_.push_back({lin->weight.value, Int8Matrix(values.data(), scales.data(), lin->weight.rows,
                                                    lin->weight.cols, isa)});
  }
}

void Int8Net::apply(const Linear<float>& lin, const CRef<float>& x, Ref<float> y) const {
  for (const Twin& t : twins_)
    if (t.weight == lin.weight.value) return t.matrix.multiply(x, y, lin.bias.value, omp_get_max_threads());
  throw Error("Int8Net: a Linear that is not the model's");
}

}  // namespace zibert
