// libFuzzer target: the safetensors container reader on arbitrary bytes.
#include <cstdint>
#include <string_view>
#include <vector>

#include "zibert/base/error.hpp"
#include "zibert/model/safetensors.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  try {
    zibert::SafeTensors st = zibert::decode_safetensors(bytes, "fuzz");
    for (const auto& [name, t] : st.tensors) {
      // Every tensor the reader accepts lies inside the input: copy it out.
      const std::size_t size = t.count * zibert::dtype_size(t.dtype);
      if (t.bytes < bytes.data() || t.bytes + size > bytes.data() + bytes.size()) __builtin_trap();
      if (t.dtype == zibert::DType::i8) {
        std::vector<std::int8_t> out(t.count);
        t.copy_to(out.data());
      } else {
        std::vector<float> out(t.count);
        t.copy_to(out.data());
      }
    }
  } catch (const zibert::Error&) {
  }
  return 0;
}
