#include "zibert/infer/predictor.hpp"

#include <omp.h>

#include <algorithm>

#include "zibert/model/batch.hpp"
#include "zibert/infer/fast_forward.hpp"

namespace zibert {
namespace {
constexpr std::size_t kBatchWindows = 32;

struct Window {
  std::size_t text;
  std::int64_t start;
  std::vector<std::int32_t> ids;  // with [CLS] and [SEP]
};
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

  std::vector<Prediction> out(texts.size());
  std::vector<float> best(texts.size(), -1.0f);
  std::vector<std::int64_t> count(texts.size(), 0);
  for (auto& p : out) p.probs.assign(k, 0.0f);
  for (std::size_t w = 0; w < windows.size(); ++w) {
    Prediction& p = out[windows[w].text];
    const float* wp = &window_probs[w * k];
    ++count[windows[w].text];
    if (binary()) {
      if (wp[positive_] > best[windows[w].text]) {
        best[windows[w].text] = wp[positive_];
        std::copy(wp, wp + k, p.probs.begin());
        p.offset = windows[w].start;
      }
    } else {
      for (std::size_t c = 0; c < k; ++c) p.probs[c] += wp[c];
      float top = *std::max_element(wp, wp + k);
      if (top > best[windows[w].text]) {
        best[windows[w].text] = top;
        p.offset = windows[w].start;
      }
    }
  }
  for (std::size_t t = 0; t < out.size(); ++t) {
    Prediction& p = out[t];
    if (binary()) {
      p.label = p.probs[positive_] >= threshold_ ? positive_ : 1 - positive_;
    } else {
      for (float& v : p.probs) v /= float(count[t]);
      p.label = static_cast<std::int32_t>(std::max_element(p.probs.begin(), p.probs.end()) - p.probs.begin());
    }
    p.prob = p.probs[p.label];
  }
  return out;
}

}  // namespace zibert
