// The safetensors container: an 8-byte little-endian header length, a JSON
// header, then raw tensor bytes. The reader trusts nothing in the file.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace zibert {

// A tensor inside the decoded bytes: no copy is made until copy_to().
struct SafeTensor {
  std::vector<std::int64_t> shape;
  const char* bytes = nullptr;  // F32, little-endian, row-major; points into the decoded buffer
  std::size_t count = 0;        // elements
  void copy_to(float* out) const;
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

// Parses bytes (name is used in error messages); the result points into bytes,
// which must outlive it. Checks the header length
// against the file, the JSON, dtypes (F32 only), shapes, and that offsets lie
// inside the data and do not overlap.
SafeTensors decode_safetensors(std::string_view bytes, const std::string& name);

// The deepest nesting of [ and { in JSON text (strings skipped). Untrusted JSON
// is checked with it before parsing: a megabyte of "[[[[" would otherwise
// become millions of nested values and gigabytes of memory.
std::size_t json_nesting_depth(std::string_view json);
inline constexpr std::size_t kMaxJsonDepth = 32;  // zibert's own files nest 3 deep

}  // namespace zibert
