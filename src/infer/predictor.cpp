#include "zibert/infer/predictor.hpp"

#include <omp.h>

#include <algorithm>

#include "zibert/model/batch.hpp"
#include "zibert/infer/fast_forward.hpp"

namespace zibert {
namespace {
constexpr std::size_t kBatchWindows = 32;
}  // namespace

Predictor::Predictor(const Classifier& model, double threshold, bool tables)
    : model_(model), threshold_(threshold), positive_(model.positive_id()) {
  if (tables) tables_ = embedding_tables(model.net);
}

std::vector<Prediction> Predictor::predict(const std::vector<std::vector<char32_t>>& texts) {
  std::vector<std::vector<std::int32_t>> ids;
  ids.reserve(texts.size());
  for (const std::vector<char32_t>& t : texts) ids.push_back(model_.tokenizer.ids(t));
  return predict_ids(ids);
}

std::vector<Prediction> Predictor::predict_ids(const std::vector<std::vector<std::int32_t>>& texts) {
  const std::int64_t width = model_.config.max_len - 2;
  const std::size_t k = model_.labels.size();
  std::vector<Window> windows;
  for (std::size_t t = 0; t < texts.size(); ++t) {
    const std::vector<std::int32_t>& ids = texts[t];
    for (std::int64_t start : window_starts(static_cast<std::int64_t>(ids.size()), width)) {
      std::int64_t end = std::min<std::int64_t>(start + width, static_cast<std::int64_t>(ids.size()));
      std::vector<std::int32_t> slice(ids.begin() + start, ids.begin() + end);
      windows.push_back({t, start, with_specials(slice, model_.config.max_len)});
    }
  }
  if (tables_)
    for (const Window& w : windows) tabulate(model_.net, *tables_, w.ids.data(), w.ids.size());
  // Windows of similar length go together, kBatchWindows at most, padded to
  // the longest; each such batch is cut into passes of about kPredictRows
  // token rows, so one pass's activations stay in a core's L2 cache.
  std::vector<std::int64_t> lengths;
  lengths.reserve(windows.size());
  for (const Window& w : windows) lengths.push_back(static_cast<std::int64_t>(w.ids.size()));
  std::vector<Batch> packed;
  std::vector<std::vector<std::size_t>> members;  // the windows of each packed batch
  for (const std::vector<std::size_t>& bucket : bucketed_batches(lengths, kBatchWindows, nullptr)) {
    std::vector<const std::vector<std::int32_t>*> seqs;
    for (std::size_t w : bucket) seqs.push_back(&windows[w].ids);
    const Batch whole = pack_batch(seqs, {});
    const Index group = std::max<Index>(1, kPredictRows / std::max<Index>(1, whole.seq));
    for (Index b0 = 0; b0 < whole.size; b0 += group) {
      const Index count = std::min(group, whole.size - b0);
      packed.push_back(whole.part(b0, count));
      members.emplace_back(bucket.begin() + b0, bucket.begin() + b0 + count);
    }
  }
  padded_tokens_ = 0;
  for (const Batch& b : packed) padded_tokens_ += static_cast<std::int64_t>(b.size * b.seq);
  std::vector<float> window_probs(windows.size() * k);  // (windows, K)
  predict_batches<float>(model_.net, packed, caches_, [&](std::size_t b, const CMatMap<float>& probs) {
    for (std::size_t r = 0; r < members[b].size(); ++r)
      for (std::size_t c = 0; c < k; ++c) window_probs[members[b][r] * k + c] = probs(static_cast<Index>(r), c);
  }, tables_.get());

  return combine(windows, window_probs, texts.size());
}

// The windows' probabilities (windows, K) combined per text as the model
// says (Classifier::window_combine), and the label decided.
std::vector<Prediction> Predictor::combine(const std::vector<Window>& windows, const std::vector<float>& window_probs,
                                           std::size_t n_texts) const {
  const std::size_t k = model_.labels.size();
  const Windows how = model_.window_combine();
  std::vector<Prediction> out(n_texts);
  std::vector<float> best(n_texts, -1.0f);
  std::vector<std::int64_t> count(n_texts, 0);
  for (auto& p : out) p.probs.assign(k, 0.0f);
  for (std::size_t w = 0; w < windows.size(); ++w) {
    const std::size_t t = windows[w].text;
    Prediction& p = out[t];
    const float* wp = &window_probs[w * k];
    ++count[t];
    if (how == Windows::max) {  // the window with the highest P(positive) decides
      if (wp[positive_] > best[t]) {
        best[t] = wp[positive_];
        std::copy(wp, wp + k, p.probs.begin());
        p.offset = windows[w].start;
      }
    } else if (how == Windows::first) {
      if (windows[w].start == 0) std::copy(wp, wp + k, p.probs.begin());
    } else {  // mean; the offset is that of the most confident window
      for (std::size_t c = 0; c < k; ++c) p.probs[c] += wp[c];
      float top = *std::max_element(wp, wp + k);
      if (top > best[t]) {
        best[t] = top;
        p.offset = windows[w].start;
      }
    }
  }
  for (std::size_t t = 0; t < out.size(); ++t) {
    Prediction& p = out[t];
    if (how == Windows::mean)
      for (float& v : p.probs) v /= float(count[t]);
    if (binary())
      p.label = p.probs[positive_] >= threshold_ ? positive_ : 1 - positive_;
    else
      p.label = static_cast<std::int32_t>(std::max_element(p.probs.begin(), p.probs.end()) - p.probs.begin());
    p.prob = p.probs[p.label];
  }
  return out;
}

}  // namespace zibert
