#include "zibert/model/calibration.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "zibert/base/error.hpp"

namespace zibert {

namespace {

constexpr double kProbFloor = 1e-12;
constexpr double kMinTemperature = 0.05, kMaxTemperature = 100;

// Mean NLL of the rows at inverse temperature beta, in double: for row r,
// ln Σ_c p_c^β − β ln p_gold (the rows are distributions, so p ∝ p^β
// renormalised is softmax(β ln p)).
double nll_at(const std::vector<float>& probs, std::size_t k, const std::vector<std::int32_t>& gold, double beta) {
  double total = 0;
  std::vector<double> logs(k);
  for (std::size_t r = 0; r < gold.size(); ++r) {
    double top = -std::numeric_limits<double>::infinity();
    for (std::size_t c = 0; c < k; ++c) {
      logs[c] = beta * std::log(std::max(double(probs[r * k + c]), 1e-300));
      top = std::max(top, logs[c]);
    }
    double sum = 0;
    for (std::size_t c = 0; c < k; ++c) sum += std::exp(logs[c] - top);
    total += top + std::log(sum) - logs[static_cast<std::size_t>(gold[r])];
  }
  return gold.empty() ? 0 : total / double(gold.size());
}

}  // namespace

nlohmann::json CalibrationStats::to_json() const {
  return {{"ece", ece}, {"brier", brier}, {"nll", nll}, {"examples", examples}};
}

nlohmann::json Calibration::to_json() const {
  return {{"method", "temperature"}, {"temperature", temperature}, {"fitted_on_examples", examples},
          {"before", before.to_json()}, {"after", after.to_json()}};
}

Calibration Calibration::from_json(const nlohmann::json& j) {
  if (!j.is_object() || !j.contains("temperature") || !j["temperature"].is_number())
    throw Error("it has no numeric \"temperature\"");
  if (j.contains("method") && j["method"] != "temperature")
    throw Error("method " + j["method"].dump() + " is not one zibert knows (temperature)");
  Calibration c;
  c.temperature = j["temperature"].get<double>();
  if (!std::isfinite(c.temperature) || c.temperature <= 0) throw Error("the temperature must be finite and > 0");
  auto stats = [&](const char* key, CalibrationStats& s) {
    if (!j.contains(key) || !j[key].is_object()) return;
    const nlohmann::json& v = j[key];
    s.ece = v.value("ece", 0.0);
    s.brier = v.value("brier", 0.0);
    s.nll = v.value("nll", 0.0);
    s.examples = v.value("examples", std::int64_t{0});
  };
  stats("before", c.before);
  stats("after", c.after);
  c.examples = j.value("fitted_on_examples", std::int64_t{0});
  return c;
}

CalibrationStats calibration_stats(const std::vector<float>& probs, std::size_t k,
                                   const std::vector<std::int32_t>& gold) {
  CalibrationStats s;
  s.bins.assign(kCalibrationBins, {});
  s.examples = static_cast<std::int64_t>(gold.size());
  if (gold.empty()) return s;
  for (std::size_t r = 0; r < gold.size(); ++r) {
    const float* p = &probs[r * k];
    const auto g = static_cast<std::size_t>(gold[r]);
    const std::size_t top = static_cast<std::size_t>(std::max_element(p, p + k) - p);
    for (std::size_t c = 0; c < k; ++c) {
      const double d = double(p[c]) - (c == g ? 1.0 : 0.0);
      s.brier += d * d;
    }
    s.nll -= std::log(std::max(double(p[g]), kProbFloor));
    const double conf = p[top];
    const int b = std::min(kCalibrationBins - 1, static_cast<int>(conf * kCalibrationBins));
    CalibrationStats::Bin& bin = s.bins[static_cast<std::size_t>(b)];
    ++bin.count;
    bin.confidence += conf;
    bin.accuracy += top == g ? 1.0 : 0.0;
  }
  const double n = double(gold.size());
  s.brier /= n;
  s.nll /= n;
  for (CalibrationStats::Bin& bin : s.bins) {
    if (bin.count == 0) continue;
    bin.confidence /= double(bin.count);
    bin.accuracy /= double(bin.count);
    s.ece += double(bin.count) / n * std::abs(bin.accuracy - bin.confidence);
  }
  return s;
}

void apply_temperature(float* probs, std::size_t k, double temperature) {
  const double beta = 1.0 / temperature;
  double logs[64];
  std::vector<double> many;
  double* l = k <= 64 ? logs : (many.resize(k), many.data());
  double top = -std::numeric_limits<double>::infinity();
  for (std::size_t c = 0; c < k; ++c) {
    l[c] = probs[c] > 0 ? beta * std::log(double(probs[c])) : -std::numeric_limits<double>::infinity();
    top = std::max(top, l[c]);
  }
  if (!std::isfinite(top)) return;  // not a distribution: left as it is
  double sum = 0;
  for (std::size_t c = 0; c < k; ++c) sum += std::exp(l[c] - top);
  for (std::size_t c = 0; c < k; ++c) probs[c] = static_cast<float>(std::exp(l[c] - top) / sum);
}

std::vector<float> tempered(std::vector<float> probs, std::size_t k, double temperature) {
  for (std::size_t r = 0; r + k <= probs.size(); r += k) apply_temperature(&probs[r], k, temperature);
  return probs;
}

double fit_temperature(const std::vector<float>& probs, std::size_t k, const std::vector<std::int32_t>& gold) {
  if (gold.empty()) throw Error("fitting a temperature needs at least one example");
  // Golden-section search over ln T; the NLL is convex in β = 1/T, so unimodal in ln T.
  const double phi = (std::sqrt(5.0) - 1) / 2;
  double lo = std::log(kMinTemperature), hi = std::log(kMaxTemperature);
  auto f = [&](double log_t) { return nll_at(probs, k, gold, std::exp(-log_t)); };
  double a = hi - phi * (hi - lo), b = lo + phi * (hi - lo), fa = f(a), fb = f(b);
  for (int i = 0; i < 60; ++i) {
    if (fa < fb) {
      hi = b, b = a, fb = fa;
      a = hi - phi * (hi - lo), fa = f(a);
    } else {
      lo = a, a = b, fa = fb;
      b = lo + phi * (hi - lo), fb = f(b);
    }
  }
  const double best = std::exp((lo + hi) / 2);
  // T = 1 (no change) when the search cannot beat it, e.g. on a tie.
  return f(std::log(best)) < f(0.0) ? best : 1.0;
}

}  // namespace zibert
