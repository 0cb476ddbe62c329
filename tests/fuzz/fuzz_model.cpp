// libFuzzer target: a whole model file (container, metadata, config,
// vocabulary and its variants, tensor names and shapes, dtypes, weights and int8 scales) on
// arbitrary bytes.
#include <cstdint>
#include <string_view>

#include "zibert/base/error.hpp"
#include "zibert/infer/fast_forward.hpp"
#include "zibert/infer/int8_net.hpp"
#include "zibert/model/model_file.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  try {
    zibert::Model model = zibert::decode_model(bytes, "fuzz");
    // A model the reader accepts must also run.
    std::vector<std::int32_t> ids = model.tokenizer.encode("佛跳墙仏");  // 仏: [UNK], or a variant
    if (static_cast<std::int64_t>(ids.size()) + 2 <= model.config.max_len) {
      zibert::Batch batch;
      batch.size = 1;
      batch.seq = static_cast<zibert::Index>(ids.size()) + 2;
      batch.ids.push_back(zibert::kCls);
      batch.ids.insert(batch.ids.end(), ids.begin(), ids.end());
      batch.ids.push_back(zibert::kSep);
      zibert::InferenceCache<float> cache;
      if (model.quantization) {  // an int8 model runs by its int8 products
        const zibert::Int8Net int8(model);
        if (model.config.task == zibert::Task::classify)
          zibert::infer_forward<float>(model.net, batch, cache, nullptr, int8);
        else
          zibert::infer_hidden<float>(model.net, batch, cache, nullptr, int8);
      } else if (model.config.task == zibert::Task::classify) {
        zibert::infer_forward(model.net, batch, cache);
      } else {
        zibert::infer_hidden(model.net, batch, cache);
      }
    }
  } catch (const zibert::Error&) {
  }
  return 0;
}
