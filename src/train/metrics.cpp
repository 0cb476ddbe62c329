#include "zibert/train/metrics.hpp"

#include <algorithm>
#include <cstdio>
#include <sstream>

namespace zibert {

LabelScore label_score(std::int64_t tp, std::int64_t predicted, std::int64_t actual) {
  LabelScore s;
  s.support = actual;
  s.precision = predicted ? double(tp) / double(predicted) : 0.0;
  s.recall = actual ? double(tp) / double(actual) : 0.0;
  // 2PR/(P+R) with the ratios cancelled: one rounding, the same bits wherever it is computed.
  s.f1 = tp ? 2.0 * double(tp) / double(predicted + actual) : 0.0;
  return s;
}

Metrics compute_metrics(const std::vector<std::string>& labels, const std::vector<std::int32_t>& gold,
                        const std::vector<std::int32_t>& predicted, const std::vector<std::string>& categories) {
  const std::size_t k = labels.size();
  Metrics m;
  m.labels = labels;
  m.confusion.assign(k, std::vector<std::int64_t>(k, 0));
  for (std::size_t i = 0; i < gold.size(); ++i) {
    ++m.confusion[gold[i]][predicted[i]];
    bool ok = gold[i] == predicted[i];
    m.correct += ok;
    if (!categories.empty() && !categories[i].empty()) {
      auto& cat = m.per_category[categories[i]];
      cat.first += ok;
      ++cat.second;
    }
  }
  m.total = static_cast<std::int64_t>(gold.size());
  m.accuracy = m.total ? double(m.correct) / double(m.total) : 0.0;
  for (std::size_t c = 0; c < k; ++c) {
    std::int64_t tp = m.confusion[c][c], pred = 0, actual = 0;
    for (std::size_t o = 0; o < k; ++o) {
      pred += m.confusion[o][c];
      actual += m.confusion[c][o];
    }
    const LabelScore s = label_score(tp, pred, actual);
    m.per_label.push_back(s);
    m.macro_f1 += s.f1 / double(k);
  }
  return m;
}

nlohmann::json Metrics::to_json() const {
  nlohmann::json j;
  j["examples"] = total;
  j["accuracy"] = accuracy;
  j["macro_f1"] = macro_f1;
  j["labels"] = nlohmann::json::object();
  for (std::size_t c = 0; c < labels.size(); ++c)
    j["labels"][labels[c]] = {{"precision", per_label[c].precision},
                              {"recall", per_label[c].recall},
                              {"f1", per_label[c].f1},
                              {"support", per_label[c].support}};
  j["confusion"] = {{"labels", labels}, {"matrix", confusion}};  // rows gold, columns predicted
  if (!per_category.empty()) {
    j["categories"] = nlohmann::json::object();
    for (const auto& [cat, ct] : per_category)
      j["categories"][cat] = {{"accuracy", double(ct.first) / double(ct.second)}, {"correct", ct.first},
                              {"examples", ct.second}};
  }
  return j;
}

std::string Metrics::to_table() const {
  std::ostringstream out;
  char buf[256];
  std::snprintf(buf, sizeof buf, "examples  %lld\naccuracy  %.4f\nmacro-F1  %.4f\n\n", static_cast<long long>(total),
                accuracy, macro_f1);
  out << buf;
  std::size_t w = 5;
  for (const auto& l : labels) w = std::max(w, l.size());
  std::snprintf(buf, sizeof buf, "%-*s  %9s  %9s  %9s  %9s\n", int(w), "label", "precision", "recall", "F1", "support");
  out << buf;
  for (std::size_t c = 0; c < labels.size(); ++c) {
    std::snprintf(buf, sizeof buf, "%-*s  %9.4f  %9.4f  %9.4f  %9lld\n", int(w), labels[c].c_str(),
                  per_label[c].precision, per_label[c].recall, per_label[c].f1,
                  static_cast<long long>(per_label[c].support));
    out << buf;
  }
  out << "\nconfusion (rows: gold, columns: predicted)\n";
  std::snprintf(buf, sizeof buf, "%-*s", int(w), "");
  out << buf;
  for (const auto& l : labels) {
    std::snprintf(buf, sizeof buf, "  %9s", l.c_str());
    out << buf;
  }
  out << '\n';
  for (std::size_t g = 0; g < labels.size(); ++g) {
    std::snprintf(buf, sizeof buf, "%-*s", int(w), labels[g].c_str());
    out << buf;
    for (std::size_t p = 0; p < labels.size(); ++p) {
      std::snprintf(buf, sizeof buf, "  %9lld", static_cast<long long>(confusion[g][p]));
      out << buf;
    }
    out << '\n';
  }
  if (!per_category.empty()) {
    std::size_t cw = 8;
    for (const auto& [cat, _] : per_category) cw = std::max(cw, cat.size());
    std::snprintf(buf, sizeof buf, "\n%-*s  %9s  %9s\n", int(cw), "category", "accuracy", "examples");
    out << buf;
    for (const auto& [cat, ct] : per_category) {
      std::snprintf(buf, sizeof buf, "%-*s  %9.4f  %9lld\n", int(cw), cat.c_str(), double(ct.first) / double(ct.second),
                    static_cast<long long>(ct.second));
      out << buf;
    }
  }
  return out.str();
}

}  // namespace zibert
