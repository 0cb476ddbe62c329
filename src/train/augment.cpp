#include "zibert/train/augment.hpp"

#include <algorithm>

#include "zibert/base/error.hpp"
#include "zibert/base/random.hpp"
#include "zibert/base/utf8.hpp"
#include "zibert/infer/fill_mask.hpp"
#include "zibert/train/distill.hpp"

namespace zibert {

std::vector<std::string> augment_texts(const std::vector<std::string>& texts, const AugmentOptions& o,
                                       const Model* encoder) {
  if (encoder && (encoder->config.task != Task::mlm || encoder->tokenizer.kind() != TokenizerKind::character))
    throw Error("--augment-with needs a character encoder (zibert pretrain's, such as zh-encoder): its fill-mask "
                "guesses replace characters");
  std::vector<std::string> out;
  out.reserve(texts.size() * static_cast<std::size_t>(o.copies));
  for (std::size_t t = 0; t < texts.size(); ++t) {
    // The text as the encoder reads it (one id per character), or its code points.
    const std::string text = encoder ? cut_for_student(texts[t], encoder->tokenizer, encoder->config.max_len) : texts[t];
    const std::vector<char32_t> chars = encoder ? encoder->tokenizer.prepare(text) : utf8_decode(text);
    for (std::int64_t c = 0; c < o.copies; ++c) {
      Rng rng(splitmix64(o.seed ^ splitmix64(t * 1000003 + static_cast<std::uint64_t>(c))));
      if (chars.empty()) {
        out.push_back(text);
        continue;
      }
      std::vector<std::uint8_t> chosen(chars.size(), 0);
      std::size_t n = 0;
      for (auto& ch : chosen) n += ch = rng.uniform() < o.share;
      if (n == 0) chosen[rng.below(chars.size())] = 1;
      std::vector<char32_t> result;
      if (!encoder) {
        for (std::size_t i = 0; i < chars.size(); ++i)
          if (!chosen[i]) result.push_back(chars[i]);
        out.push_back(utf8_encode(result));
        continue;
      }
      std::vector<std::int32_t> ids = encoder->tokenizer.ids(chars);
      const std::vector<std::int32_t> original = ids;
      const SpecialIds specials = encoder->tokenizer.specials();
      for (std::size_t i = 0; i < ids.size(); ++i)
        if (chosen[i]) ids[i] = specials.mask;
      const std::vector<std::vector<MaskGuess>> guesses = fill_mask(*encoder, ids, o.top_k + 1);
      std::size_t m = 0;
      for (std::size_t i = 0; i < chars.size(); ++i) {
        if (!chosen[i]) {
          result.push_back(chars[i]);
          continue;
        }
        std::vector<std::int32_t> options;
        for (const MaskGuess& g : guesses[m++])
          if (g.id != original[i] && !specials.contains(g.id) && static_cast<int>(options.size()) < o.top_k)
            options.push_back(g.id);
        if (options.empty()) {
          result.push_back(chars[i]);
          continue;
        }
        const std::vector<char32_t> piece = utf8_decode(encoder->tokenizer.token(options[rng.below(options.size())]));
        result.insert(result.end(), piece.begin(), piece.end());
      }
      out.push_back(utf8_encode(result));
    }
  }
  return out;
}

}  // namespace zibert
