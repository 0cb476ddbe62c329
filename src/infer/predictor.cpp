#include "zibert/infer/predictor.hpp"

#include <algorithm>
#include <cmath>

#include "zibert/infer/fast_forward.hpp"

namespace zibert {
namespace {

const Model& classifier(const Model& model) {
  if (model.config.task != Task::classify)
    throw Error("this model is an encoder (zibert pretrain's): it has no labels to predict; fine-tune it with "
                "zibert train --init, or use it with embed or fill-mask");
  return model;
}

}  // namespace

Predictor::Predictor(const Model& model, double threshold, bool tables, Weights weights)
    : model_(classifier(model)),
      threshold_(threshold),
      positive_(model.classifier.positive_id()),
      products_(model, weights) {
  if (tables) tables_ = embedding_tables(model.net);
}

std::vector<Prediction> Predictor::predict(const std::vector<std::vector<char32_t>>& texts) {
  std::vector<std::vector<std::int32_t>> ids;
  ids.reserve(texts.size());
  for (const std::vector<char32_t>& t : texts) ids.push_back(model_.tokenizer.ids(t));
  return predict_ids(ids);
}

WindowPlan Predictor::run_windows(const std::vector<std::vector<std::int32_t>>& texts, std::vector<float>& probs,
                                  std::vector<float>* logits) {
  const std::size_t k = model_.classifier.labels.size();
  WindowPlan plan = plan_windows(texts, model_.config.max_len, model_.tokenizer.specials());
  if (tables_)
    for (const Window& w : plan.windows) tabulate(model_.net, *tables_, w.ids.data(), w.ids.size());
  padded_tokens_ = plan.padded_tokens;
  probs.assign(plan.windows.size() * k, 0.0f);  // (windows, K)
  if (logits) logits->assign(plan.windows.size() * k, 0.0f);
  const LinearProducts<float>& products = products_.get();
  for_each_batch<float>(plan.passes.size(), caches_, [&](std::size_t b, InferenceCache<float>& cache) {
    const CMatMap<float> p = infer_forward(model_.net, plan.passes[b], cache, tables_.get(), products);
    for (std::size_t r = 0; r < plan.members[b].size(); ++r)
      for (std::size_t c = 0; c < k; ++c) {
        const std::size_t at = plan.members[b][r] * k + c;
        probs[at] = p(static_cast<Index>(r), static_cast<Index>(c));
        if (logits) (*logits)[at] = cache.logits.data[r * k + c];
      }
  });
  return plan;
}

std::vector<Prediction> Predictor::predict_ids(const std::vector<std::vector<std::int32_t>>& texts) {
  std::vector<float> window_probs;
  const WindowPlan plan = run_windows(texts, window_probs, nullptr);
  return combine(plan.windows, window_probs, texts.size(), calibrated());
}

std::vector<float> Predictor::logits(const std::vector<std::vector<std::int32_t>>& texts) {
  if (multi_label()) throw Error("logits: a multi-label model's sigmoids have no softmax logits");
  const std::size_t k = model_.classifier.labels.size();
  std::vector<float> window_probs, window_logits;
  const WindowPlan plan = run_windows(texts, window_probs, &window_logits);
  std::vector<std::size_t> windows(texts.size(), 0), last(texts.size(), 0);
  for (std::size_t w = 0; w < plan.windows.size(); ++w) ++windows[plan.windows[w].text], last[plan.windows[w].text] = w;
  std::vector<float> out(texts.size() * k);
  std::vector<Prediction> combined;
  for (std::size_t t = 0; t < texts.size(); ++t) {
    if (windows[t] == 1) {
      std::copy_n(&window_logits[last[t] * k], k, &out[t * k]);
      continue;
    }
    if (combined.empty())  // the raw probabilities, windows combined as the model says
      combined = combine(plan.windows, window_probs, texts.size(), /*temper=*/false);
    for (std::size_t c = 0; c < k; ++c) out[t * k + c] = std::log(std::max(combined[t].probs[c], 1e-30f));
  }
  return out;
}

std::int32_t Predictor::decide(const float* probs) const {
  if (binary()) return probs[positive_] >= threshold_ ? positive_ : 1 - positive_;
  return static_cast<std::int32_t>(std::max_element(probs, probs + model_.classifier.labels.size()) - probs);
}

std::vector<std::int32_t> Predictor::decide_labels(const float* probs) const {
  std::vector<std::int32_t> out;
  for (std::size_t c = 0; c < model_.classifier.labels.size(); ++c)
    if (probs[c] >= threshold_) out.push_back(static_cast<std::int32_t>(c));
  if (out.empty()) out.push_back(decide(probs));
  return out;
}

// The windows' probabilities (windows, K) combined per text as the model
// says (ClassifierPart::window_combine), and the label decided.
std::vector<Prediction> Predictor::combine(const std::vector<Window>& windows, const std::vector<float>& window_probs,
                                           std::size_t n_texts, bool temper) const {
  const std::size_t k = model_.classifier.labels.size();
  const Windows how = model_.classifier.window_combine();
  std::vector<Prediction> out(n_texts);
  std::vector<float> best(n_texts, -1.0f);
  std::vector<std::int64_t> count(n_texts, 0);
  for (auto& p : out) p.probs.assign(k, 0.0f);
  for (std::size_t w = 0; w < windows.size(); ++w) {
    const std::size_t t = windows[w].text;
    Prediction& p = out[t];
    const float* wp = &window_probs[w * k];
    ++count[t];
    if (how == Windows::max && multi_label()) {  // each label's most probable window
      for (std::size_t c = 0; c < k; ++c) p.probs[c] = std::max(p.probs[c], wp[c]);
      const float top = *std::max_element(wp, wp + k);
      if (top > best[t]) {
        best[t] = top;
        p.offset = windows[w].start;
      }
    } else if (how == Windows::max) {  // the window with the highest P(positive) decides
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
    // The text's probabilities tempered (after the windows combine, so the
    // best label stays the same; the threshold reads the calibrated P).
    if (temper) apply_temperature(p.probs.data(), k, model_.classifier.calibration->temperature);
    p.label = decide(p.probs.data());
    p.prob = p.probs[p.label];
    if (multi_label()) p.labels = decide_labels(p.probs.data());
  }
  return out;
}

}  // namespace zibert
