#include "zibert/train/multi_label_metrics.hpp"

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "zibert/base/error.hpp"

namespace zibert {

MultiLabelMetrics compute_multi_label_metrics(const std::vector<std::string>& labels,
                                              const std::vector<std::uint8_t>& gold,
                                              const std::vector<std::uint8_t>& predicted) {
  const std::size_t k = labels.size();
  if (k == 0 || gold.size() != predicted.size() || gold.size() % k != 0)
    throw Error("multi-label metrics need (n, K) gold and predicted label sets");
  MultiLabelMetrics m;
  m.labels = labels;
  m.total = static_cast<std::int64_t>(gold.size() / k);
  std::vector<std::int64_t> tp(k, 0), actual(k, 0);
  m.predicted_count.assign(k, 0);
  std::int64_t wrong = 0;
  for (std::int64_t i = 0; i < m.total; ++i) {
    bool same = true;
    for (std::size_t c = 0; c < k; ++c) {
      const bool g = gold[i * k + c] != 0, p = predicted[i * k + c] != 0;
      tp[c] += g && p;
      actual[c] += g;
      m.predicted_count[c] += p;
      same = same && g == p;
      wrong += g != p;
    }
    m.exact += same;
  }
  std::int64_t tp_all = 0, actual_all = 0, predicted_all = 0;
  for (std::size_t c = 0; c < k; ++c) {
    const LabelScore s = label_score(tp[c], m.predicted_count[c], actual[c]);
    m.per_label.push_back(s);
    m.macro_f1 += s.f1 / double(k);
    tp_all += tp[c];
    actual_all += actual[c];
    predicted_all += m.predicted_count[c];
  }
  const LabelScore pooled = label_score(tp_all, predicted_all, actual_all);  // every text × label decision
  m.micro_precision = pooled.precision;
  m.micro_recall = pooled.recall;
  m.micro_f1 = pooled.f1;
  m.exact_match = m.total ? double(m.exact) / double(m.total) : 0.0;
  m.hamming_loss = m.total ? double(wrong) / double(m.total * static_cast<std::int64_t>(k)) : 0.0;
  return m;
}

nlohmann::json MultiLabelMetrics::to_json() const {
  nlohmann::json j;
  j["examples"] = total;
  j["multi_label"] = true;
  j["exact_match"] = exact_match;
  j["micro_precision"] = micro_precision;
  j["micro_recall"] = micro_recall;
  j["micro_f1"] = micro_f1;
  j["macro_f1"] = macro_f1;
  j["hamming_loss"] = hamming_loss;
  j["labels"] = nlohmann::json::object();
  for (std::size_t c = 0; c < labels.size(); ++c)
    j["labels"][labels[c]] = {{"precision", per_label[c].precision}, {"recall", per_label[c].recall},
                              {"f1", per_label[c].f1},               {"support", per_label[c].support},
                              {"predicted", predicted_count[c]}};
  return j;
}

std::string MultiLabelMetrics::to_table() const {
  std::ostringstream out;
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "examples      %lld\nexact match   %.4f\nmicro-F1      %.4f  (precision %.4f, recall %.4f)\n"
                "macro-F1      %.4f\nhamming loss  %.4f\n\n",
                static_cast<long long>(total), exact_match, micro_f1, micro_precision, micro_recall, macro_f1,
                hamming_loss);
  out << buf;
  std::size_t w = 5;
  for (const auto& l : labels) w = std::max(w, l.size());
  std::snprintf(buf, sizeof buf, "%-*s  %9s  %9s  %9s  %9s  %9s\n", int(w), "label", "precision", "recall", "F1",
                "support", "predicted");
  out << buf;
  for (std::size_t c = 0; c < labels.size(); ++c) {
    std::snprintf(buf, sizeof buf, "%-*s  %9.4f  %9.4f  %9.4f  %9lld  %9lld\n", int(w), labels[c].c_str(),
                  per_label[c].precision, per_label[c].recall, per_label[c].f1,
                  static_cast<long long>(per_label[c].support), static_cast<long long>(predicted_count[c]));
    out << buf;
  }
  return out.str();
}

}  // namespace zibert
