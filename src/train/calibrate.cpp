#include "zibert/train/calibrate.hpp"

#include "zibert/base/error.hpp"
#include "zibert/infer/predictor.hpp"

namespace zibert {

ScoredData score_dataset(const Model& model, const Dataset& data) {
  std::vector<std::vector<std::int32_t>> texts;
  ScoredData out;
  for (const Example& ex : data.rows) {
    const std::int32_t id = model.classifier.label_id(ex.label);
    if (id < 0) throw Error(data.name + ":" + std::to_string(ex.line) + ": label \"" + ex.label + "\" is not the model's");
    texts.push_back(model.tokenizer.encode(ex.text));
    out.gold.push_back(id);
  }
  Predictor predictor(model, 0.5, true, Predictor::Weights::in_place);  // beside the training state
  predictor.set_raw_probs(true);
  for (const Prediction& p : predictor.predict_ids(texts)) out.probs.insert(out.probs.end(), p.probs.begin(), p.probs.end());
  return out;
}

CalibrationReport calibration_report(const Model& model, const std::vector<float>& raw_probs,
                                     const std::vector<std::int32_t>& gold) {
  const std::size_t k = model.classifier.labels.size();
  CalibrationReport r{calibration_stats(raw_probs, k, gold), std::nullopt};
  if (model.classifier.calibration) r.calibrated = calibration_stats(tempered(raw_probs, k, model.classifier.calibration->temperature), k, gold);
  return r;
}

Calibration calibrate(const Model& model, const Dataset& data) {
  if (data.rows.empty()) throw Error("calibration needs held-out examples, and " + data.name + " has none");
  const ScoredData scored = score_dataset(model, data);
  const std::size_t k = model.classifier.labels.size();
  Calibration c;
  c.examples = static_cast<std::int64_t>(scored.gold.size());
  c.before = calibration_stats(scored.probs, k, scored.gold);
  c.temperature = fit_temperature(scored.probs, k, scored.gold);
  c.after = calibration_stats(tempered(scored.probs, k, c.temperature), k, scored.gold);
  c.before.bins.clear();
  c.after.bins.clear();
  return c;
}

}  // namespace zibert
