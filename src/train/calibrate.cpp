#include "zibert/train/calibrate.hpp"

#include "zibert/base/error.hpp"
#include "zibert/infer/predictor.hpp"

namespace zibert {

ScoredData score_dataset(const Classifier& model, const Dataset& data, bool raw) {
  std::vector<std::vector<std::int32_t>> texts;
  ScoredData out;
  for (const Example& ex : data.rows) {
    const std::int32_t id = model.label_id(ex.label);
    if (id < 0) throw Error(data.name + ":" + std::to_string(ex.line) + ": label \"" + ex.label + "\" is not the model's");
    texts.push_back(model.tokenizer.encode(ex.text));
    out.gold.push_back(id);
  }
  Predictor predictor(model);
  predictor.set_raw_probs(raw);
  for (const Prediction& p : predictor.predict_ids(texts)) out.probs.insert(out.probs.end(), p.probs.begin(), p.probs.end());
  return out;
}

Calibration calibrate(const Classifier& model, const Dataset& data) {
  if (data.rows.empty()) throw Error("calibration needs held-out examples, and " + data.name + " has none");
  ScoredData scored = score_dataset(model, data, /*raw=*/true);
  const std::size_t k = model.labels.size();
  Calibration c;
  c.examples = static_cast<std::int64_t>(scored.gold.size());
  c.before = calibration_stats(scored.probs, k, scored.gold);
  c.temperature = fit_temperature(scored.probs, k, scored.gold);
  for (std::size_t r = 0; r < scored.gold.size(); ++r) apply_temperature(&scored.probs[r * k], k, c.temperature);
  c.after = calibration_stats(scored.probs, k, scored.gold);
  c.before.bins.clear();
  c.after.bins.clear();
  return c;
}

}  // namespace zibert
