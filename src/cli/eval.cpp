// zibert eval: score a model on labelled data.
#include <cstdio>
#include <optional>
#include <set>

#include "cli.hpp"
#include "zibert/text/dataset.hpp"
#include "zibert/base/progress.hpp"
#include "zibert/train/calibrate.hpp"
#include "zibert/train/metrics.hpp"
#include "zibert/train/multi_label_metrics.hpp"
#include "zibert/infer/predictor.hpp"

namespace zibert::cli {
namespace {

struct EvalCli {
  std::string model, data;
  double threshold = 0.5;
  bool json = false, raw_probs = false, threshold_given = false, progress = false;
  int threads = 0;
};

// The labels data names that the model lacks, as an error naming them (none: no error).
void check_labels(const Model& model, const Dataset& data, const std::string& path) {
  std::set<std::string> unknown;
  for (const Example& ex : data.rows)
    if (data.multi_label) {
      for (const std::string& l : ex.labels)
        if (model.classifier.label_id(l) < 0) unknown.insert(l);
    } else if (model.classifier.label_id(ex.label) < 0) {
      unknown.insert(ex.label);
    }
  if (unknown.empty()) return;
  std::string names;
  for (const auto& u : unknown) names += (names.empty() ? "\"" : ", \"") + u + "\"";
  std::string known;
  for (const auto& l : model.classifier.labels) known += (known.empty() ? "\"" : ", \"") + l + "\"";
  throw Error(path + ": labels the model does not know: " + names + " (the model's labels are " + known + ")");
}

// Every text predicted, in slices for the progress line (a text's prediction
// does not depend on the others').
std::vector<Prediction> predict_all(Predictor& predictor, const std::vector<std::vector<std::int32_t>>& texts,
                                    const EvalCli& o) {
  constexpr std::size_t kSlice = 4096;
  InputProgress progress(InputProgress::wanted(o.progress));
  std::vector<Prediction> preds;
  preds.reserve(texts.size());
  for (std::size_t first = 0; first < texts.size(); first += kSlice) {
    const auto begin = texts.begin() + static_cast<std::ptrdiff_t>(first);
    const auto end = texts.begin() + static_cast<std::ptrdiff_t>(std::min(texts.size(), first + kSlice));
    std::vector<Prediction> part = predictor.predict_ids({begin, end});
    preds.insert(preds.end(), std::make_move_iterator(part.begin()), std::make_move_iterator(part.end()));
    progress.update(o.data, static_cast<std::int64_t>(preds.size()), static_cast<std::int64_t>(texts.size()));
  }
  progress.finish(o.data, static_cast<std::int64_t>(preds.size()), static_cast<std::int64_t>(texts.size()));
  return preds;
}

// A multi-label model: each text's predicted label set against its gold one.
std::string multi_label_report(const Model& model, const Dataset& data, const std::vector<Prediction>& preds,
                               bool json) {
  const std::size_t k = model.classifier.labels.size();
  std::vector<std::uint8_t> gold(preds.size() * k, 0), predicted(preds.size() * k, 0);
  for (std::size_t i = 0; i < preds.size(); ++i) {
    for (const std::string& l : data.rows[i].labels) gold[i * k + static_cast<std::size_t>(model.classifier.label_id(l))] = 1;
    for (std::int32_t c : preds[i].labels) predicted[i * k + static_cast<std::size_t>(c)] = 1;
  }
  const MultiLabelMetrics m = compute_multi_label_metrics(model.classifier.labels, gold, predicted);
  return json ? m.to_json().dump(2) + "\n" : m.to_table();
}

// A single-label model: metrics of its decided labels, and how well the
// probabilities mean what they say, raw and as calibrated.
std::string single_label_report(const Model& model, const Predictor& predictor, const Dataset& data,
                                const std::vector<Prediction>& preds, const EvalCli& o) {
  std::vector<std::int32_t> gold;
  std::vector<std::string> categories;
  for (const Example& ex : data.rows) {
    gold.push_back(model.classifier.label_id(ex.label));
    categories.push_back(ex.category);
  }
  const std::size_t k = model.classifier.labels.size();
  std::vector<float> raw_probs;
  for (const Prediction& p : preds) raw_probs.insert(raw_probs.end(), p.probs.begin(), p.probs.end());
  // The labels: from the calibrated probabilities (as classify decides), or --raw-probs the raw ones.
  const bool use_calibrated = model.classifier.calibration && !o.raw_probs;
  const std::vector<float> probs = use_calibrated ? tempered(raw_probs, k, model.classifier.calibration->temperature) : raw_probs;
  std::vector<std::int32_t> predicted;
  for (std::size_t i = 0; i < preds.size(); ++i) predicted.push_back(predictor.decide(&probs[i * k]));
  Metrics m = compute_metrics(model.classifier.labels, gold, predicted, data.has_category ? categories : std::vector<std::string>{});
  const CalibrationReport report = calibration_report(model, raw_probs, gold);
  const CalibrationStats* raw = &report.raw;
  const std::optional<CalibrationStats>& tempered_stats = report.calibrated;
  if (o.json) {
    nlohmann::json j = m.to_json();
    j["calibration"] = {{"temperature", model.classifier.calibration ? nlohmann::json(model.classifier.calibration->temperature) : nullptr},
                        {"bins", kCalibrationBins},
                        {"raw", raw->to_json()},
                        {"calibrated", tempered_stats ? tempered_stats->to_json() : nlohmann::json(nullptr)},
                        {"probabilities", use_calibrated ? "calibrated" : "raw"}};
    return j.dump(2) + "\n";
  }
  std::string out = m.to_table();
  char row[160];
  out += "\ncalibration (" + std::to_string(kCalibrationBins) + " bins)   ECE      Brier    NLL\n";
  std::snprintf(row, sizeof row, "  raw                    %-8.4f %-8.4f %.4f\n", raw->ece, raw->brier, raw->nll);
  out += row;
  if (tempered_stats) {
    std::snprintf(row, sizeof row, "  temperature %-10.3g %-8.4f %-8.4f %.4f\n", model.classifier.calibration->temperature,
                  tempered_stats->ece, tempered_stats->brier, tempered_stats->nll);
    out += row;
  } else {
    out += "  (no temperature: the model was trained before calibration or with --no-calibration)\n";
  }
  return out;
}

int run_eval(const EvalCli& o) {
  apply_threads(o.threads);
  Model model = load_classifier(o.model);
  const bool multi_label = model.config.multi_label;
  if (o.threshold_given && !model.classifier.binary() && !multi_label)
    throw Error("--threshold decides a binary model's positive label (or a multi-label model's labels); " + o.model +
                " has " + std::to_string(model.classifier.labels.size()) + " labels and no positive one, so it would do nothing");
  if (o.raw_probs && multi_label)
    throw Error("--raw-probs: " + o.model + " is multi-label and has no temperature, so its probabilities are raw already");
  Dataset data = read_data_option(o.data, multi_label);
  check_labels(model, data, data.name);
  std::vector<std::vector<std::int32_t>> texts;
  for (const Example& ex : data.rows) texts.push_back(model.tokenizer.encode(ex.text));
  // Raw probabilities, predicted once: the calibrated ones are these tempered.
  Predictor predictor(model, o.threshold);
  predictor.set_raw_probs(true);
  const std::vector<Prediction> preds = predict_all(predictor, texts, o);
  const std::string out = multi_label ? multi_label_report(model, data, preds, o.json)
                                      : single_label_report(model, predictor, data, preds, o);
  std::fwrite(out.data(), 1, out.size(), stdout);
  return kExitOk;
}

}  // namespace

Runner setup_eval(CLI::App& app) {
  auto o = std::make_shared<EvalCli>();
  app.footer(
      "Score a model on labelled data (same formats as train): accuracy, macro-F1,\n"
      "per-label precision/recall/F1, confusion matrix, per-category accuracy, and how\n"
      "well the probabilities are calibrated (ECE over 15 bins, Brier score, NLL), raw\n"
      "and at the model's temperature. A multi-label model (train --multi-label): per-label\n"
      "precision/recall/F1, micro- and macro-F1, exact-match accuracy and Hamming loss.\n\n"
      "Example:\n  zibert eval -m my.safetensors --data test.tsv --json");
  add_model_option(app, o->model);
  app.add_option("--data", o->data, "Labelled data file, or - for stdin")->required()->check(file_or_stdin());
  CLI::Option* threshold = add_threshold_option(app, o->threshold);
  app.add_flag("--json", o->json, "JSON output");
  app.add_flag("--progress", o->progress, "Show progress on stderr even when it is not a terminal");
  app.add_flag("--raw-probs", o->raw_probs,
               "Decide and score by the network's raw probabilities, not the calibrated ones");
  add_threads_option(app, o->threads);
  add_bf16_option(app);
  return [o, threshold] {
    o->threshold_given = threshold->count() > 0;
    return run_eval(*o);
  };
}

}  // namespace zibert::cli
