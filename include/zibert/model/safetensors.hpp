// The safetensors container: an 8-byte little-endian header length, a JSON
// header, then raw tensor bytes. The reader trusts nothing in the file.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace zibert {

// The element types zibert reads and writes: float32 weights, int8 ones of
// a quantized model (zibert quantize), and float16 ones of a model stored in
// half precision (zibert quantize --to float16). Hugging Face checkpoints
// also hold bfloat16 weights and int64 buffers (position_ids), which zibert
// reads and never writes.
enum class DType { f32, i8, f16, bf16, i64 };
const char* dtype_name(DType t);  // "F32", "I8", "F16", "BF16", "I64": safetensors' names
std::size_t dtype_size(DType t);  // bytes per element
bool is_float_dtype(DType t);     // F32, F16 or BF16: read as float32, exactly
float float_from_bfloat16(std::uint16_t b);  // exact: every bfloat16 is a float

// A tensor inside the decoded bytes: no copy is made until copy_to().
struct SafeTensor {
  std::vector<std::int64_t> shape;
  DType dtype = DType::f32;
  const char* bytes = nullptr;  // little-endian, row-major; points into the decoded buffer
  std::size_t count = 0;        // elements
  void copy_to(float* out) const;        // F32, or F16 or BF16 widened (exactly); throws Error for I8 and I64
  void copy_to(std::int8_t* out) const;  // throws Error unless I8
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
  const void* data;  // count elements of dtype
  DType dtype = DType::f32;
};
std::string encode_safetensors(const std::map<std::string, std::string>& metadata,
                               const std::vector<TensorRef>& tensors);
// The same bytes written to path atomically (write_file_atomic), each tensor
// from where it is: no copy of the whole file is made in memory.
void save_safetensors(const std::string& path, const std::map<std::string, std::string>& metadata,
                      const std::vector<TensorRef>& tensors);

// Parses bytes (name is used in error messages); the result points into bytes,
// which must outlive it. Checks the header length
// against the file, the JSON, dtypes (F32, I8 and F16), shapes, and that offsets lie
// inside the data and do not overlap.
SafeTensors decode_safetensors(std::string_view bytes, const std::string& name);

// The deepest nesting of [ and { in JSON text (strings skipped). Untrusted JSON
// is checked with it before parsing: a megabyte of "[[[[" would otherwise
// become millions of nested values and gigabytes of memory.
std::size_t json_nesting_depth(std::string_view json);
inline constexpr std::size_t kMaxJsonDepth = 32;  // zibert's own files nest 3 deep

}  // namespace zibert
