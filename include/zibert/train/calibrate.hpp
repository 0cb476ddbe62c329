// After training: the temperature that calibrates a classifier's
// probabilities on held-out data (model/calibration.hpp), with the
// measures before and after.
#pragma once
#include <optional>

#include "zibert/model/model.hpp"
#include "zibert/text/dataset.hpp"

namespace zibert {

// The model's raw probabilities on data's texts (its own calibration not
// applied), a temperature fitted to them, and the NLL, ECE and Brier score
// before and after. Throws Error when data is empty or has a label the model
// does not know.
Calibration calibrate(const Model& model, const Dataset& data);

// The model's raw probabilities (n, K) on data's texts, its temperature not
// applied, and the gold label ids (same checks as calibrate).
struct ScoredData {
  std::vector<float> probs;
  std::vector<std::int32_t> gold;
};
ScoredData score_dataset(const Model& model, const Dataset& data);

// How well raw probabilities (n, K) are calibrated, and, when the model has a
// temperature, the same probabilities tempered by it (what it predicts).
struct CalibrationReport {
  CalibrationStats raw;
  std::optional<CalibrationStats> calibrated;
};
CalibrationReport calibration_report(const Model& model, const std::vector<float>& raw_probs,
                                     const std::vector<std::int32_t>& gold);

}  // namespace zibert
