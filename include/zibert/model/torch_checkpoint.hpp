// A state dict saved by torch.save (pytorch_model.bin), read without
// executing anything: the zip archive torch ≥ 1.6 writes, its data.pkl read
// by a small pickle machine that knows only the opcodes and globals a state
// dict needs (collections.OrderedDict, torch._utils._rebuild_tensor_v2 and
// _rebuild_parameter, and the Float, Half, BFloat16 and Long storages), as
// torch.load(weights_only=True) restricts itself. Anything else is an Error
// naming it.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "zibert/model/safetensors.hpp"

namespace zibert {

// A tensor of a checkpoint: elements of dtype at base, laid out by strides
// (in elements). Safetensors' tensors are contiguous; torch's may be views
// into a storage that other tensors share (a tied decoder).
struct StridedTensor {
  DType dtype = DType::f32;
  std::vector<std::int64_t> shape, strides;
  const char* base = nullptr;  // the first element (storage offset applied)
  std::size_t count() const;   // elements of shape
  // Every element as float32, in row-major order (exact for F32, F16, BF16);
  // throws Error for I8 and I64.
  void copy_to(float* out) const;
};

// A contiguous view of a safetensors tensor.
StridedTensor strided(const SafeTensor& t);

// The tensors of the state dict, in the pickle's order. bytes must outlive
// the result. Throws Error, prefixed with name, on anything but a zip
// archive holding a state dict of tensors (the legacy format of torch < 1.6
// is refused by name), a forbidden opcode or global, a pickle over 64 MiB or
// of more than a million objects, and a tensor reaching outside its storage.
std::vector<std::pair<std::string, StridedTensor>> read_torch_state_dict(std::string_view bytes,
                                                                          const std::string& name);

}  // namespace zibert
