#include "zibert/infer/fill_mask.hpp"

#include <algorithm>

#include "zibert/base/error.hpp"
#include "zibert/base/utf8.hpp"

namespace zibert {

std::vector<std::int32_t> encode_with_masks(const Tokenizer& tokenizer, const std::string& text) {
  static const std::string kMaskText = "[MASK]";
  std::vector<std::int32_t> ids;
  bool any = false;
  for (std::size_t from = 0;;) {
    const std::size_t at = text.find(kMaskText, from);
    std::vector<std::int32_t> piece;
    try {
      piece = tokenizer.encode(text.substr(from, at == std::string::npos ? at : at - from));
    } catch (const Utf8Error& e) {  // the offset in the whole text, not in the piece
      throw Utf8Error(static_cast<std::int64_t>(from) + e.byte, "invalid UTF-8");
    }
    ids.insert(ids.end(), piece.begin(), piece.end());
    if (at == std::string::npos) break;
    ids.push_back(tokenizer.specials().mask);
    any = true;
    from = at + kMaskText.size();
  }
  if (!any) throw Error("the text has no [MASK] to fill");
  return ids;
}

std::vector<std::vector<MaskGuess>> fill_mask(const Model& encoder, const std::vector<std::int32_t>& ids,
                                              int top_k) {
  if (encoder.config.task != Task::mlm)
    throw Error("fill-mask needs an encoder (a zibert pretrain model); this model is a classifier");
  if (static_cast<std::int64_t>(ids.size()) > encoder.config.max_len - 2)
    throw Error("the text has " + std::to_string(ids.size()) + " characters; this encoder reads at most " +
                std::to_string(encoder.config.max_len - 2));
  MaskedBatch masked;
  masked.batch.size = 1;
  masked.batch.seq = static_cast<Index>(ids.size()) + 2;
  const SpecialIds specials = encoder.tokenizer.specials();
  masked.batch.ids = with_specials(ids, encoder.config.max_len, specials);
  for (std::size_t i = 0; i < ids.size(); ++i)
    if (ids[i] == specials.mask) masked.positions.push_back(static_cast<std::int32_t>(i + 1));
  // One short text: the training pass without dropout is fast enough, and
  // it is the pass the masked-LM head was trained and checked in.
  ModelCache<float> cache;
  encoder.net.forward_mlm(masked, cache, nullptr);
  const Index v = encoder.config.vocab_size;
  const MatMap<float> probs(cache.mlm.probs.data.data(), static_cast<Index>(masked.positions.size()), v);
  std::vector<std::vector<MaskGuess>> out;
  for (Index m = 0; m < probs.rows(); ++m) {
    std::vector<MaskGuess> all;
    for (Index id = 0; id < v; ++id)
      if (!specials.contains(static_cast<std::int32_t>(id)))
        all.push_back({static_cast<std::int32_t>(id), double(probs(m, id))});
    const auto k = static_cast<std::ptrdiff_t>(std::min<std::size_t>(static_cast<std::size_t>(std::max(top_k, 1)), all.size()));
    std::partial_sort(all.begin(), all.begin() + k, all.end(), [](const MaskGuess& a, const MaskGuess& b) {
      return a.probability != b.probability ? a.probability > b.probability : a.id < b.id;
    });
    all.resize(static_cast<std::size_t>(k));
    out.push_back(std::move(all));
  }
  return out;
}

}  // namespace zibert
