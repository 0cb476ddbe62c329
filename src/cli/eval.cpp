// zibert eval: score a model on labelled data.
#include <cstdio>
#include <set>

#include "cli.hpp"
#include "zibert/text/dataset.hpp"
#include "zibert/train/metrics.hpp"
#include "zibert/infer/predictor.hpp"

namespace zibert::cli {
namespace {

struct EvalCli {
  std::string model, data;
  double threshold = 0.5;
  bool json = false;
  int threads = 0;
};

int run_eval(const EvalCli& o) {
  apply_threads(o.threads);
  Classifier model = load_classifier(o.model);
  Dataset data = read_dataset(o.data);
  std::set<std::string> unknown;
  for (const Example& ex : data.rows)
    if (model.label_id(ex.label) < 0) unknown.insert(ex.label);
  if (!unknown.empty()) {
    std::string names;
    for (const auto& u : unknown) names += (names.empty() ? "\"" : ", \"") + u + "\"";
    std::string known;
    for (const auto& l : model.labels) known += (known.empty() ? "\"" : ", \"") + l + "\"";
    throw Error(o.data + ": labels the model does not know: " + names + " (the model's labels are " + known + ")");
  }
  std::vector<std::vector<std::int32_t>> texts;
  std::vector<std::int32_t> gold;
  std::vector<std::string> categories;
  for (const Example& ex : data.rows) {
    texts.push_back(model.tokenizer.encode(ex.text));
    gold.push_back(model.label_id(ex.label));
    categories.push_back(ex.category);
  }
  Predictor predictor(model, o.threshold);
  std::vector<Prediction> preds = predictor.predict_ids(texts);
  std::vector<std::int32_t> predicted;
  for (const Prediction& p : preds) predicted.push_back(p.label);
  Metrics m = compute_metrics(model.labels, gold, predicted, data.has_category ? categories : std::vector<std::string>{});
  std::string out = o.json ? m.to_json().dump(2) + "\n" : m.to_table();
  std::fwrite(out.data(), 1, out.size(), stdout);
  return kExitOk;
}

}  // namespace

Runner setup_eval(CLI::App& app) {
  auto o = std::make_shared<EvalCli>();
  app.footer(
      "Score a model on labelled data (same formats as train): accuracy, macro-F1,\n"
      "per-label precision/recall/F1, confusion matrix, per-category accuracy.\n\n"
      "Example:\n  zibert eval -m my.safetensors --data test.tsv --json");
  add_model_option(app, o->model);
  app.add_option("--data", o->data, "Labelled data file")->required();
  add_threshold_option(app, o->threshold);
  app.add_flag("--json", o->json, "JSON output");
  add_threads_option(app, o->threads);
  return [o] { return run_eval(*o); };
}

}  // namespace zibert::cli
