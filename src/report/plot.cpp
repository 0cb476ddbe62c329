#include "zibert/report/plot.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "zibert/base/error.hpp"
#include "zibert/report/svg.hpp"

namespace zibert {

std::vector<double> nice_ticks(double lo, double hi, int count) {
  if (!(hi > lo)) hi = lo + 1;
  double raw = (hi - lo) / std::max(1, count);
  double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = mag;
  for (double m : {1.0, 2.0, 2.5, 5.0, 10.0})
    if (m * mag >= raw) {
      step = m * mag;
      break;
    }
  std::vector<double> ticks;
  for (double v = std::ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) ticks.push_back(v);
  return ticks;
}

namespace {

struct Series {
  const char* key;
  const char* label;
  const char* colour;
};

std::string fmt(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", std::abs(v) < 1e-12 ? 0.0 : v);
  return buf;
}

// One panel: axes, ticks, polylines with points, legend.
std::string panel(const std::vector<nlohmann::json>& records, const std::vector<Series>& series, const char* title,
                  int x0, int y0, int w, int h, bool unit_range) {
  double xmin = 0, xmax = 1, ymin = 1e300, ymax = -1e300;
  for (const auto& r : records) xmax = std::max(xmax, r.value("step", 0.0));
  for (const auto& r : records)
    for (const auto& s : series)
      if (r.contains(s.key) && r[s.key].is_number()) {
        ymin = std::min(ymin, r[s.key].get<double>());
        ymax = std::max(ymax, r[s.key].get<double>());
      }
  if (ymin > ymax) ymin = 0, ymax = 1;
  if (unit_range) ymax = std::max(ymax, 1.0);
  ymin = unit_range ? std::min(ymin, ymax - 0.05) : 0.0;
  std::vector<double> yt = nice_ticks(ymin, ymax, 5), xt = nice_ticks(xmin, xmax, 6);
  ymin = std::min(ymin, yt.front());
  ymax = std::max(ymax, yt.back());
  auto X = [&](double v) { return x0 + (v - xmin) / (xmax - xmin) * w; };
  auto Y = [&](double v) { return y0 + h - (v - ymin) / (ymax - ymin) * h; };
  char buf[256];
  std::string s = "<g class=\"panel\">\n";
  std::snprintf(buf, sizeof buf, "<text x=\"%d\" y=\"%d\" font-size=\"14\" font-weight=\"bold\">%s</text>\n", x0,
                y0 - 12, title);
  s += buf;
  std::snprintf(buf, sizeof buf,
                "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"black\"/><line x1=\"%d\" y1=\"%d\" x2=\"%d\" "
                "y2=\"%d\" stroke=\"black\"/>\n",
                x0, y0 + h, x0 + w, y0 + h, x0, y0, x0, y0 + h);
  s += buf;
  for (double v : xt) {
    std::snprintf(buf, sizeof buf,
                  "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"black\"/><text x=\"%.1f\" y=\"%d\" "
                  "font-size=\"11\" text-anchor=\"middle\">%s</text>\n",
                  X(v), y0 + h, X(v), y0 + h + 5, X(v), y0 + h + 18, fmt(v).c_str());
    s += buf;
  }
  for (double v : yt) {
    std::snprintf(buf, sizeof buf,
                  "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#ddd\"/><line x1=\"%d\" y1=\"%.1f\" "
                  "x2=\"%d\" y2=\"%.1f\" stroke=\"black\"/><text x=\"%d\" y=\"%.1f\" font-size=\"11\" "
                  "text-anchor=\"end\">%s</text>\n",
                  x0, Y(v), x0 + w, Y(v), x0 - 5, Y(v), x0, Y(v), x0 - 8, Y(v) + 4, fmt(v).c_str());
    s += buf;
  }
  std::snprintf(buf, sizeof buf, "<text x=\"%d\" y=\"%d\" font-size=\"12\" text-anchor=\"middle\">step</text>\n",
                x0 + w / 2, y0 + h + 36);
  s += buf;
  // Losses fall and metrics rise: the legend goes where the curves are not.
  int legend_y = unit_range ? y0 + h - 18 * static_cast<int>(series.size()) : y0 + 8;
  for (const auto& ser : series) {
    std::string points;
    for (const auto& r : records)
      if (r.contains(ser.key) && r[ser.key].is_number()) {
        std::snprintf(buf, sizeof buf, "%.1f,%.1f ", X(r.value("step", 0.0)), Y(r[ser.key].get<double>()));
        points += buf;
        std::snprintf(buf, sizeof buf, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"2.5\" fill=\"%s\"/>\n",
                      X(r.value("step", 0.0)), Y(r[ser.key].get<double>()), ser.colour);
        s += buf;
      }
    s += "<polyline class=\"series\" fill=\"none\" stroke-width=\"2\" stroke=\"" + std::string(ser.colour) +
         "\" points=\"" + points + "\"/>\n";
    std::snprintf(buf, sizeof buf,
                  "<g class=\"legend\"><line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"%s\" "
                  "stroke-width=\"2\"/><text x=\"%d\" y=\"%d\" font-size=\"12\">%s</text></g>\n",
                  x0 + w - 150, legend_y, x0 + w - 126, legend_y, ser.colour, x0 + w - 120, legend_y + 4, ser.label);
    s += buf;
    legend_y += 18;
  }
  return s + "</g>\n";
}

}  // namespace

std::string training_curves_svg(const std::vector<nlohmann::json>& records, const std::string& title) {
  if (records.empty()) throw Error("no training records to plot");
  std::vector<nlohmann::json> rows;
  for (nlohmann::json r : records) {  // accept the log's and the model history's key for F1
    if (!r.contains("dev_macro_f1") && r.contains("dev_f1")) r["dev_macro_f1"] = r["dev_f1"];
    rows.push_back(r);
  }
  const int width = 960, height = 420;
  std::string s = svg_open(width, height);
  s += "<text x=\"20\" y=\"28\" font-size=\"16\" font-weight=\"bold\">" + xml_escape(title) + "</text>\n";
  s += panel(rows, {{"train_loss", "train loss", "#1f77b4"}, {"dev_loss", "dev loss", "#ff7f0e"}}, "loss", 70, 80, 370,
             270, false);
  if (rows.front().contains("dev_micro_f1"))  // a multi-label run's
    s += panel(rows, {{"dev_exact_match", "dev exact match", "#2ca02c"}, {"dev_micro_f1", "dev micro-F1", "#d62728"}},
               "dev metrics", 550, 80, 370, 270, true);
  else
    s += panel(rows, {{"dev_accuracy", "dev accuracy", "#2ca02c"}, {"dev_macro_f1", "dev macro-F1", "#d62728"}},
               "dev metrics", 550, 80, 370, 270, true);
  return s + "</svg>\n";
}

}  // namespace zibert
