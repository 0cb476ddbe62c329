// Calibrated probabilities: temperature scaling (Guo et al., 2017). One
// scalar T, fitted after training by minimising the dev set's negative
// log-likelihood, divides the logits: p_T = softmax(z / T). As softmax(z) = p,
// p_T ∝ p^(1/T), so it applies to probabilities as well; the predicted
// class never changes (argmax is kept), only how sure the model says it is.
// And the measures of how well probabilities mean what they say: expected
// calibration error over 15 equal-width confidence bins, the Brier score,
// the NLL, and the bins themselves for a reliability diagram.
#pragma once
#include <cstdint>
#include <vector>

#include <nlohmann/json.hpp>

namespace zibert {

// How well a set of predictions' probabilities are calibrated.
struct CalibrationStats {
  double ece = 0;    // Σ_bins (n_b / n) |accuracy_b − confidence_b|, 15 bins of the top probability
  double brier = 0;  // mean over examples of Σ_c (p_c − [c = gold])²
  double nll = 0;    // mean −ln p_gold (p floored at 1e-12)
  std::int64_t examples = 0;
  struct Bin {
    std::int64_t count = 0;
    double confidence = 0, accuracy = 0;  // means over the bin's examples
  };
  std::vector<Bin> bins;  // kCalibrationBins, of [b/15, (b+1)/15)
  nlohmann::json to_json() const;  // ece, brier, nll, examples (bins left out)
};

inline constexpr int kCalibrationBins = 15;

// What train records in the model (metadata "calibration").
struct Calibration {
  double temperature = 1;
  CalibrationStats before, after;  // on the data it was fitted on (ECE, Brier, NLL; no bins kept)
  std::int64_t examples = 0;
  nlohmann::json to_json() const;
  static Calibration from_json(const nlohmann::json& j);  // throws Error on a missing or bad temperature
};

// probs: (n, K) row-major, each row a distribution; gold: (n) label ids.
CalibrationStats calibration_stats(const std::vector<float>& probs, std::size_t k, const std::vector<std::int32_t>& gold);

// p ∝ p^(1/T), in place, for each row of K (in log space; a zero stays zero).
void apply_temperature(float* probs, std::size_t k, double temperature);
// Every row (n, K) of probs so tempered.
std::vector<float> tempered(std::vector<float> probs, std::size_t k, double temperature);

// The T in [0.05, 100] that minimises the NLL of probs at temperature T
// (golden-section search on ln T; the NLL is convex in 1/T).
double fit_temperature(const std::vector<float>& probs, std::size_t k, const std::vector<std::int32_t>& gold);

}  // namespace zibert
