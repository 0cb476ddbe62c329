#include "zibert/train/masking.hpp"

#include "zibert/base/error.hpp"
#include "zibert/base/random.hpp"
#include "zibert/text/vocab.hpp"

namespace zibert {

MaskedBatch mask_tokens(const Batch& batch, std::int64_t vocab_size, const SpecialIds& specials, std::uint64_t seed,
                        std::uint64_t epoch, double rate) {
  if (vocab_size <= kNumSpecial || vocab_size <= specials.first_regular)
    throw Error("masking needs a vocabulary beyond the special tokens");
  MaskedBatch out;
  out.batch = batch;
  out.batch.labels.clear();
  const std::uint64_t base = splitmix64(seed ^ splitmix64(epoch + 0x6D61736BULL));  // "mask"
  const auto characters = static_cast<std::uint64_t>(vocab_size - specials.first_regular);
  for (Index b = 0; b < batch.size; ++b) {
    const auto sequence = static_cast<std::uint64_t>(batch.first + b);
    for (Index t = 0; t < batch.seq; ++t) {
      const Index row = b * batch.seq + t;
      const std::int32_t id = batch.ids[row];
      if (specials.contains(id)) continue;
      // Three draws per token from one counter: chosen?, which action, which character.
      Rng rng(base + (sequence << 20) * 3 + static_cast<std::uint64_t>(t) * 3);
      if (rng.uniform() >= rate) continue;
      out.positions.push_back(static_cast<std::int32_t>(row));
      out.targets.push_back(id);
      const double action = rng.uniform();
      if (action < 0.8)
        out.batch.ids[row] = specials.mask;
      else if (action < 0.9)
        out.batch.ids[row] = static_cast<std::int32_t>(specials.first_regular + rng.below(characters));
    }
  }
  return out;
}

}  // namespace zibert
