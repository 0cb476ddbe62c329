// The safetensors container: an 8-byte little-endian header length, a JSON
// header, then raw tensor bytes. The reader trusts nothing in the file.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace zibert {

struct SafeTensor {
  std::vector<std::int64_t> shape;
  std::vector<float> data;  // F32, row-major
};

struct SafeTensors {
  std::map<std::string, std::string> metadata;
  std::map<std::string, SafeTensor> tensors;
};

// Serialises to the safetensors byte layout; tensors are laid out in the order
// given and the header's JSON keys are sorted, so the bytes are deterministic.
struct TensorRef {
  std::string name;
  std::vector<std::int64_t> shape;
  const float* data;
};
std::string encode_safetensors(const std::map<std::string, std::string>& metadata,
                               const std::vector<TensorRef>& tensors);

// Parses bytes (name is used in error messages). Checks the header length
// against the file, the JSON, dtypes (F32 only), shapes, and that offsets lie
// inside the data and do not overlap.
SafeTensors decode_safetensors(const std::string& bytes, const std::string& name);

}  // namespace zibert
