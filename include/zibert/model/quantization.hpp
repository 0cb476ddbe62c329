// A quantized model's matrices (zibert quantize): the word and position
// embeddings and every Linear's weight as int8, symmetric, one float32 scale
// per row (w ≈ q · scale). Biases and LayerNorms stay float32. The network
// of a quantized Model holds the dequantized values (q · scale, in
// float), which is what the float parts read (the embeddings, the first
// layer's tables, a folded last layer, explain's training pass); the int8
// inference path (infer/int8_net.hpp) multiplies by the ints themselves.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "zibert/model/bert.hpp"

namespace zibert {

struct QuantizedTensor {
  Index rows = 0, cols = 0;
  std::vector<std::int8_t> values;  // (rows, cols)
  std::vector<float> scales;        // (rows), each finite and > 0
};

struct Quantization {
  std::map<std::string, QuantizedTensor> tensors;  // by tensor name: every matrix of the layout
};

// What the model file stores: the scale of tensor NAME is NAME + kScaleSuffix,
// and metadata "quantization" says how (quantization_metadata).
inline constexpr const char* kScaleSuffix = "_scale";
inline constexpr const char* kQuantizationScheme = "int8-symmetric-per-row";

// The tensors a quantized model stores as int8: the matrices.
bool is_quantized_tensor(const TensorInfo& t);

// Quantizes every matrix of net, whose values become the dequantized ones.
Quantization quantize_net(Bert<float>& net);
// net's matrices = q · scale, from q.
void dequantize_into(const Quantization& q, Bert<float>& net);

// {"scheme": ..., "weights": "int8", "scales": ..., "activations": ..., "tensors": [names]}
nlohmann::json quantization_metadata(const Quantization& q);

}  // namespace zibert
