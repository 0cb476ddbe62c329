#include "zibert/model/quantization.hpp"

#include "zibert/nn/qgemm.hpp"
#include "zibert/nn/quantize_rows.hpp"

namespace zibert {

bool is_quantized_tensor(const TensorInfo& t) { return t.shape.size() == 2; }

Quantization quantize_net(Bert<float>& net) {
  Quantization out;
  for (const TensorInfo& t : net.layout()) {
    if (!is_quantized_tensor(t)) continue;
    QuantizedTensor q{t.shape[0], t.shape[1], std::vector<std::int8_t>(t.size), std::vector<float>(t.shape[0])};
    quantize_symmetric(CMatMap<float>(net.params().data() + t.offset, q.rows, q.cols), q.values.data(),
                       q.scales.data());
    out.tensors.emplace(t.name, std::move(q));
  }
  dequantize_into(out, net);
  return out;
}

void dequantize_into(const Quantization& q, Bert<float>& net) {
  for (const TensorInfo& t : net.layout()) {
    auto it = q.tensors.find(t.name);
    if (it == q.tensors.end()) continue;
    float* dst = net.params().data() + t.offset;
    const QuantizedTensor& qt = it->second;
    for (Index r = 0; r < qt.rows; ++r)
      for (Index c = 0; c < qt.cols; ++c)
        dst[r * qt.cols + c] = static_cast<float>(qt.values[r * qt.cols + c]) * qt.scales[r];
  }
}

nlohmann::json quantization_metadata(const Quantization& q) {
  nlohmann::json names = nlohmann::json::array();
  for (const auto& [name, t] : q.tensors) names.push_back(name);
  return {{"scheme", kQuantizationScheme},
          {"weights", "int8, symmetric, one float32 scale per row (tensor NAME_scale)"},
          {"activations", "u8 with a zero point, per row, computed at inference"},
          {"tensors", names}};
}

}  // namespace zibert
