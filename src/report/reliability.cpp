#include "zibert/report/reliability.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "zibert/base/error.hpp"
#include "zibert/report/svg.hpp"

namespace zibert {

namespace {

constexpr int kLeft = 70, kTop = 70, kSide = 360, kCountsTop = kTop + kSide + 60, kCountsHeight = 110;

struct Set {
  const CalibrationStats& stats;
  const char* name;
  const char* colour;
};

std::string rect(double x, double y, double w, double h, const char* fill, const char* extra = "") {
  char buf[256];
  std::snprintf(buf, sizeof buf, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\"%s/>\n", x, y,
                w, std::max(h, 0.0), fill, extra);
  return buf;
}

std::string text(double x, double y, const std::string& s, const char* attrs = "") {
  char buf[512];
  std::snprintf(buf, sizeof buf, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"12\"%s>%s</text>\n", x, y, attrs,
                xml_escape(s).c_str());
  return buf;
}

}  // namespace

std::string reliability_svg(const CalibrationStats& raw, const std::optional<CalibrationStats>& calibrated,
                            double temperature, const std::string& title) {
  if (raw.bins.size() != static_cast<std::size_t>(kCalibrationBins) ||
      (calibrated && calibrated->bins.size() != raw.bins.size()))
    throw Error("a reliability diagram needs the bins of calibration_stats");
  std::vector<Set> sets{{raw, "raw", "#1f77b4"}};
  if (calibrated) sets.push_back({*calibrated, "calibrated", "#ff7f0e"});
  const double bin_w = double(kSide) / kCalibrationBins, bar_w = bin_w / double(sets.size()) - 1;
  auto X = [](double p) { return kLeft + p * kSide; };
  auto Y = [](double p) { return kTop + (1 - p) * kSide; };
  const int width = kLeft + kSide + 300, height = kCountsTop + kCountsHeight + 50;
  char buf[512];
  std::string s = svg_open(width, height);
  s += "<text x=\"20\" y=\"28\" font-size=\"16\" font-weight=\"bold\">" + xml_escape(title) + "</text>\n";
  // The reliability panel: accuracy per confidence bin, and the diagonal.
  s += rect(X(0), Y(1), kSide, kSide, "none", " stroke=\"black\"");
  for (int t = 0; t <= 5; ++t) {
    const double v = t / 5.0;
    std::snprintf(buf, sizeof buf, "%.1f", v);
    s += text(X(v), Y(0) + 16, buf, " text-anchor=\"middle\"");
    s += text(X(0) - 6, Y(v) + 4, buf, " text-anchor=\"end\"");
    std::snprintf(buf, sizeof buf, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>\n", X(0),
                  Y(v), X(1), Y(v));
    s += buf;
  }
  std::snprintf(buf, sizeof buf,
                "<line class=\"diagonal\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#888\" "
                "stroke-dasharray=\"5,4\"/>\n",
                X(0), Y(0), X(1), Y(1));
  s += buf;
  s += text(X(0.5), Y(0) + 36, "confidence (the top probability), 15 bins", " text-anchor=\"middle\"");
  std::snprintf(buf, sizeof buf, " text-anchor=\"middle\" transform=\"rotate(-90 %d %d)\"", kLeft - 40, kTop + kSide / 2);
  s += text(kLeft - 40, kTop + kSide / 2, "accuracy in the bin", buf);
  std::int64_t top_count = 1;
  for (const Set& set : sets)
    for (const auto& bin : set.stats.bins) top_count = std::max(top_count, bin.count);
  for (std::size_t k = 0; k < sets.size(); ++k)
    for (int b = 0; b < kCalibrationBins; ++b) {
      const auto& bin = sets[k].stats.bins[static_cast<std::size_t>(b)];
      const double x = X(double(b) / kCalibrationBins) + double(k) * (bar_w + 1) + 0.5;
      if (bin.count > 0) s += rect(x, Y(bin.accuracy), bar_w, bin.accuracy * kSide, sets[k].colour, " class=\"bar\"");
      // How many predictions the bin holds, on a log scale below.
      const double h = bin.count > 0 ? std::log1p(double(bin.count)) / std::log1p(double(top_count)) * kCountsHeight : 0;
      s += rect(x, kCountsTop + kCountsHeight - h, bar_w, h, sets[k].colour, " class=\"count\"");
    }
  s += rect(X(0), kCountsTop, kSide, kCountsHeight, "none", " stroke=\"black\"");
  s += text(X(0), kCountsTop - 8, "predictions per bin (log scale; the largest: " + std::to_string(top_count) + ")");
  // The legend: each set's measures.
  double ly = kTop + 10;
  for (const Set& set : sets) {
    s += rect(X(1) + 30, ly - 10, 14, 14, set.colour);
    std::string name = set.name;
    if (set.name == std::string("calibrated")) {
      std::snprintf(buf, sizeof buf, "calibrated (T = %.3g)", temperature);
      name = buf;
    }
    s += text(X(1) + 52, ly + 2, name, " font-weight=\"bold\"");
    std::snprintf(buf, sizeof buf, "ECE %.4f", set.stats.ece);
    s += text(X(1) + 52, ly + 20, buf);
    std::snprintf(buf, sizeof buf, "Brier %.4f, NLL %.4f", set.stats.brier, set.stats.nll);
    s += text(X(1) + 52, ly + 36, buf);
    ly += 64;
  }
  std::snprintf(buf, sizeof buf, "%lld predictions", static_cast<long long>(raw.examples));
  s += text(X(1) + 30, ly + 4, buf);
  s += text(X(1) + 30, ly + 22, "dashed: perfect calibration");
  return s + "</svg>\n";
}

}  // namespace zibert
