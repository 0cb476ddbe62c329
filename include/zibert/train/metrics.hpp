// Classification metrics: accuracy, per-label precision/recall/F1, macro-F1,
// confusion matrix, per-category accuracy.
#pragma once
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace zibert {

struct LabelScore {
  double precision = 0, recall = 0, f1 = 0;
  std::int64_t support = 0;
};
// A label's scores from its true positives, predictions and gold occurrences
// (support = actual); F1 as 2·tp/(predicted + actual), one rounding.
LabelScore label_score(std::int64_t tp, std::int64_t predicted, std::int64_t actual);

struct Metrics {
  std::vector<std::string> labels;
  std::vector<std::vector<std::int64_t>> confusion;  // [gold][predicted]
  std::int64_t total = 0, correct = 0;
  double accuracy = 0, macro_f1 = 0;
  std::vector<LabelScore> per_label;
  std::map<std::string, std::pair<std::int64_t, std::int64_t>> per_category;  // correct, total

  nlohmann::json to_json() const;
  std::string to_table() const;
};

// gold and predicted are label ids into labels; categories may be empty.
Metrics compute_metrics(const std::vector<std::string>& labels, const std::vector<std::int32_t>& gold,
                        const std::vector<std::int32_t>& predicted, const std::vector<std::string>& categories);

}  // namespace zibert
