#include "zibert/report/explain.hpp"

#include <utf8proc.h>

#include <algorithm>
#include <cstdio>

#include "zibert/model/batch.hpp"
#include "zibert/report/svg.hpp"
#include "zibert/text/tokenizer.hpp"

namespace zibert {

int display_width(const std::string& token) {
  int w = 0;
  for (char32_t c : utf8_decode(token)) w += std::max(0, utf8proc_charwidth(static_cast<utf8proc_int32_t>(c)));
  return w;
}

Explanation explain(const Model& model, const std::vector<char32_t>& text) {
  Explanation e;
  e.text = utf8_encode(text);
  Predictor predictor(model);
  e.prediction = predictor.predict({text})[0];
  e.offset = e.prediction.offset;
  e.target = model.classifier.positive_id() >= 0 ? model.classifier.positive_id() : e.prediction.label;

  const std::int64_t width = model.config.max_len - 2;
  std::vector<std::int32_t> ids = model.tokenizer.ids(text);
  std::int64_t end = std::min<std::int64_t>(e.offset + width, static_cast<std::int64_t>(ids.size()));
  std::vector<std::int32_t> window =
      with_specials(std::vector<std::int32_t>(ids.begin() + e.offset, ids.begin() + end), model.config.max_len,
                    model.tokenizer.specials());
  for (std::size_t i = 0; i < window.size(); ++i) {
    if (i == 0 || i + 1 == window.size() || model.tokenizer.kind() == TokenizerKind::wordpiece)
      e.tokens.push_back(model.tokenizer.token(window[i]));  // a special, or a WordPiece token
    else
      e.tokens.push_back(utf8_encode(text[static_cast<std::size_t>(e.offset) + i - 1]));  // the character, even if [UNK]
  }

  // The window alone, then one copy per character with that character as [UNK].
  const Index t = static_cast<Index>(window.size());
  // The training pass without dropout, on every row: the attention maps of
  // every token, the last layer's too.
  ModelCache<float> cache;
  Batch one = pack_batch({&window}, {});
  model.net.forward(one, cache, nullptr, LastRows::all);
  for (std::int64_t l = 0; l < model.config.layers; ++l) {
    MatR<float> probs(model.config.heads * t, t);  // (H*T, T)
    model.net.layers()[l].attention.weights(cache.layers[l].attn, 1, t, cache.key_valid.data(), 0, probs);
    std::vector<MatR<float>> heads;
    for (Index h = 0; h < model.config.heads; ++h) heads.push_back(probs.middleRows(h * t, t));
    e.attention.push_back(std::move(heads));
  }
  float base = CMatMap<float>(cache.probs.data.data(), 1, model.config.labels)(0, e.target);
  std::vector<std::vector<std::int32_t>> occluded;
  for (Index i = 1; i + 1 < t; ++i) {
    occluded.push_back(window);
    occluded.back()[i] = model.tokenizer.specials().unk;
  }
  e.occlusion.assign(window.size(), 0.0f);
  if (!occluded.empty()) {
    std::vector<const std::vector<std::int32_t>*> seqs;
    for (const auto& s : occluded) seqs.push_back(&s);
    model.net.forward(pack_batch(seqs, {}), cache, nullptr, LastRows::all);
    const CMatMap<float> p(cache.probs.data.data(), static_cast<Index>(occluded.size()), model.config.labels);
    for (Index i = 1; i + 1 < t; ++i) e.occlusion[i] = base - p(i - 1, e.target);
  }
  return e;
}

namespace {

// "label  p=0.9860", or a multi-label model's "drink p=0.9811, price p=0.9859".
std::string prediction_summary(const Prediction& p, const Model& model) {
  char buf[96];
  if (!model.config.multi_label) {
    std::snprintf(buf, sizeof buf, "  p=%.4f", double(p.prob));
    return model.classifier.labels[p.label] + buf;
  }
  std::string out;
  for (std::int32_t c : p.labels) {
    std::snprintf(buf, sizeof buf, " p=%.4f", double(p.probs[c]));
    out += (out.empty() ? "" : ", ") + model.classifier.labels[c] + buf;
  }
  return out;
}

}  // namespace

nlohmann::json explanation_json(const Explanation& e, const Model& model) {
  nlohmann::json j;
  j["text"] = e.text;
  j["label"] = model.classifier.labels[e.prediction.label];
  j["prob"] = e.prediction.prob;
  if (model.config.multi_label) {
    j["labels"] = nlohmann::json::array();
    for (std::int32_t c : e.prediction.labels) j["labels"].push_back(model.classifier.labels[c]);
  }
  j["probs"] = nlohmann::json::object();
  for (std::size_t c = 0; c < model.classifier.labels.size(); ++c) j["probs"][model.classifier.labels[c]] = e.prediction.probs[c];
  j["window_offset"] = e.offset;
  j["tokens"] = e.tokens;
  j["occlusion_label"] = model.classifier.labels[e.target];
  j["occlusion"] = e.occlusion;
  j["attention"] = nlohmann::json::array();  // [layer][head][query][key]
  for (const auto& layer : e.attention) {
    nlohmann::json heads = nlohmann::json::array();
    for (const auto& m : layer) {
      nlohmann::json rows = nlohmann::json::array();
      for (Index r = 0; r < m.rows(); ++r) rows.push_back(std::vector<float>(m.row(r).begin(), m.row(r).end()));
      heads.push_back(rows);
    }
    j["attention"].push_back(heads);
  }
  return j;
}

namespace {

std::string pad(const std::string& token, int width) {
  return std::string(static_cast<std::size_t>(std::max(0, width - display_width(token))), ' ') + token;
}

// White to deep blue.
void shade(float w, int& r, int& g, int& b) {
  w = std::clamp(w, 0.0f, 1.0f);
  r = static_cast<int>(255 - w * (255 - 8));
  g = static_cast<int>(255 - w * (255 - 48));
  b = static_cast<int>(255 - w * (255 - 107));
}

std::string printable(const std::string& token) { return token == " " ? "␠" : token; }

}  // namespace

std::string explanation_terminal(const Explanation& e, const Model& model, bool colour) {
  char buf[160];
  std::string out = "prediction  " + prediction_summary(e.prediction, model);
  if (e.offset > 0) out += "  (window at character " + std::to_string(e.offset) + ")";
  out += "\n\n[CLS] attention: how much [CLS] takes from each token\n";
  const std::size_t t = e.tokens.size();
  auto row_line = [&](const std::string& name, const std::vector<float>& w) {
    std::string line = name;
    for (std::size_t k = 0; k < t; ++k) {
      if (colour) {
        int r, g, b;
        shade(w[k], r, g, b);
        std::snprintf(buf, sizeof buf, "\033[48;2;%d;%d;%dm\033[38;2;%d;%d;%dm", r, g, b, w[k] > 0.5f ? 255 : 0,
                      w[k] > 0.5f ? 255 : 0, w[k] > 0.5f ? 255 : 0);
        line += buf + printable(e.tokens[k]) + "\033[0m";
      } else {
        std::snprintf(buf, sizeof buf, "%.3f", double(w[k]));
        line += " " + pad(buf, std::max(5, display_width(printable(e.tokens[k]))));
      }
    }
    return line + "\n";
  };
  auto header = [&](const std::string& name) {
    std::string line = name;
    for (const auto& tok : e.tokens) line += " " + pad(printable(tok), std::max(5, display_width(printable(tok))));
    return line + "\n";
  };
  for (std::size_t l = 0; l < e.attention.size(); ++l) {
    const auto& heads = e.attention[l];
    if (!colour) out += header(pad("layer " + std::to_string(l + 1), 12));
    std::vector<float> mean(t, 0.0f);
    for (std::size_t h = 0; h < heads.size(); ++h) {
      std::vector<float> w(heads[h].row(0).begin(), heads[h].row(0).end());
      for (std::size_t k = 0; k < t; ++k) mean[k] += w[k] / float(heads.size());
      out += row_line(pad("L" + std::to_string(l + 1) + " head " + std::to_string(h + 1), 12) + (colour ? " " : ""), w);
    }
    out += row_line(pad("L" + std::to_string(l + 1) + " mean", 12) + (colour ? " " : ""), mean);
    out += "\n";
  }
  out += "occlusion: drop in P(" + model.classifier.labels[e.target] + ") when the token alone becomes [UNK]\n";
  if (!colour) out += header(pad("", 12));
  std::vector<float> occ(e.occlusion.begin(), e.occlusion.end());
  if (colour) {
    std::string line = pad("drop", 12) + " ";
    for (std::size_t k = 0; k < t; ++k) {
      int r, g, b;
      shade(std::max(0.0f, occ[k]), r, g, b);
      std::snprintf(buf, sizeof buf, "\033[48;2;%d;%d;%dm\033[38;2;0;0;0m", r, g, b);
      line += buf + printable(e.tokens[k]) + "\033[0m";
    }
    out += line + "\n";
  } else {
    std::string line = pad("drop", 12);
    for (std::size_t k = 0; k < t; ++k) {
      std::snprintf(buf, sizeof buf, "%+.3f", double(occ[k]));
      line += " " + pad(buf, std::max(5, display_width(printable(e.tokens[k]))));
    }
    out += line + "\n";
  }
  return out;
}

std::string explanation_svg(const Explanation& e, const Model& model) {
  const int cell = 18, label_w = 44, gap = 36, top = 70;
  const int t = static_cast<int>(e.tokens.size());
  const int layers = static_cast<int>(e.attention.size()), heads = static_cast<int>(model.config.heads);
  const int map = t * cell;
  const int panel_w = label_w + map + gap, panel_h = 28 + label_w + map + gap;
  const int width = std::max(600, heads * panel_w + 120), height = top + layers * panel_h + 20;
  const char* fonts = "'Noto Sans CJK SC', 'Noto Sans CJK TC', 'Source Han Sans SC', 'WenQuanYi Micro Hei', "
                      "'PingFang SC', 'Microsoft YaHei', sans-serif";
  char buf[512];
  std::string s;
  s += svg_open(width, height, fonts);
  s += "<text x=\"16\" y=\"28\" font-size=\"16\" font-weight=\"bold\">" + xml_escape(e.text.size() > 300 ? e.text.substr(0, 300) + "…" : e.text) +
       "</text>\n<text x=\"16\" y=\"50\" font-size=\"13\">prediction " + xml_escape(prediction_summary(e.prediction, model)) +
       " — rows are queries, columns are keys; the [CLS] row is outlined</text>\n";
  for (int l = 0; l < layers; ++l)
    for (int h = 0; h < heads; ++h) {
      const MatR<float>& a = e.attention[l][h];
      const int x0 = 16 + h * panel_w, y0 = top + l * panel_h;
      std::snprintf(buf, sizeof buf, "<g class=\"heatmap\" data-layer=\"%d\" data-head=\"%d\">\n", l + 1, h + 1);
      s += buf;
      std::snprintf(buf, sizeof buf, "<text x=\"%d\" y=\"%d\" font-size=\"13\">layer %d, head %d</text>\n",
                    x0 + label_w, y0 + 14, l + 1, h + 1);
      s += buf;
      const int mx = x0 + label_w, my = y0 + 28 + label_w;
      for (int k = 0; k < t; ++k) {  // key labels on top, query labels on the left
        std::snprintf(buf, sizeof buf, "<text x=\"%d\" y=\"%d\" font-size=\"11\" text-anchor=\"middle\">",
                      mx + k * cell + cell / 2, my - 6);
        s += buf + xml_escape(e.tokens[k] == "[CLS]" ? "C" : e.tokens[k] == "[SEP]" ? "S" : e.tokens[k]) + "</text>\n";
        std::snprintf(buf, sizeof buf, "<text x=\"%d\" y=\"%d\" font-size=\"11\" text-anchor=\"end\">", mx - 4,
                      my + k * cell + cell / 2 + 4);
        s += buf + xml_escape(e.tokens[k]) + "</text>\n";
      }
      for (int q = 0; q < t; ++q)
        for (int k = 0; k < t; ++k) {
          int r, g, b;
          shade(a(q, k), r, g, b);
          std::snprintf(buf, sizeof buf,
                        "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"rgb(%d,%d,%d)\"><title>%s → %s: "
                        "%.3f</title></rect>\n",
                        mx + k * cell, my + q * cell, cell, cell, r, g, b, xml_escape(e.tokens[q]).c_str(),
                        xml_escape(e.tokens[k]).c_str(), double(a(q, k)));
          s += buf;
        }
      std::snprintf(buf, sizeof buf,
                    "<rect class=\"cls-row\" x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" "
                    "stroke=\"#d62728\" stroke-width=\"2\"/>\n</g>\n",
                    mx, my, map, cell);
      s += buf;
    }
  // Colour bar on the right.
  const int bx = width - 70, by = top + 40, bh = 200;
  s += "<defs><linearGradient id=\"bar\" x1=\"0\" y1=\"1\" x2=\"0\" y2=\"0\">"
       "<stop offset=\"0\" stop-color=\"rgb(255,255,255)\"/><stop offset=\"1\" stop-color=\"rgb(8,48,107)\"/>"
       "</linearGradient></defs>\n";
  std::snprintf(buf, sizeof buf,
                "<g class=\"colour-bar\"><rect x=\"%d\" y=\"%d\" width=\"16\" height=\"%d\" fill=\"url(#bar)\" "
                "stroke=\"black\"/>\n<text x=\"%d\" y=\"%d\" font-size=\"11\">1.0</text>\n<text x=\"%d\" y=\"%d\" "
                "font-size=\"11\">0.5</text>\n<text x=\"%d\" y=\"%d\" font-size=\"11\">0.0</text>\n<text x=\"%d\" "
                "y=\"%d\" font-size=\"11\">weight</text></g>\n",
                bx, by, bh, bx + 20, by + 4, bx + 20, by + bh / 2 + 4, bx + 20, by + bh + 4, bx - 4, by - 10);
  s += buf;
  s += "</svg>\n";
  return s;
}

}  // namespace zibert
