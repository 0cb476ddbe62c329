// Multi-label metrics (train --multi-label): each text has a set of labels
// and the model predicts a set. Per label precision, recall and F1; micro-F1
// (over every label decision pooled), macro-F1 (the labels' mean) and the
// exact-match accuracy (the share of texts whose set is right as a whole).
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "zibert/train/metrics.hpp"

namespace zibert {

struct MultiLabelMetrics {
  std::vector<std::string> labels;
  std::int64_t total = 0, exact = 0;  // texts, and those whose predicted set equals the gold one
  double exact_match = 0, micro_precision = 0, micro_recall = 0, micro_f1 = 0, macro_f1 = 0;
  double hamming_loss = 0;            // the share of the n×K label decisions that are wrong
  std::vector<LabelScore> per_label;  // support: texts that carry the label
  std::vector<std::int64_t> predicted_count;  // texts given the label

  nlohmann::json to_json() const;
  std::string to_table() const;
};

// gold and predicted are (n, K) row-major, 1 where the text has the label.
MultiLabelMetrics compute_multi_label_metrics(const std::vector<std::string>& labels,
                                              const std::vector<std::uint8_t>& gold,
                                              const std::vector<std::uint8_t>& predicted);

}  // namespace zibert
