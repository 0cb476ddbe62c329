// zibert plot: training curves from a train --log file, or a model's
// reliability diagram on labelled data.
#include "cli.hpp"
#include "zibert/base/line_source.hpp"
#include "zibert/base/io.hpp"
#include "zibert/report/plot.hpp"
#include "zibert/report/reliability.hpp"
#include "zibert/text/dataset.hpp"
#include "zibert/train/calibrate.hpp"

namespace zibert::cli {
namespace {

struct PlotCli {
  std::string log, svg, model, data;
  bool reliability = false;
  int threads = 0;
};

int run_reliability(const PlotCli& o) {
  apply_threads(o.threads);
  const std::string path = resolve_model_path(o.model);
  const Model model = load_classifier(path);
  const Dataset data = read_dataset(o.data);
  const ScoredData raw = score_dataset(model, data);
  const CalibrationReport report = calibration_report(model, raw.probs, raw.gold);
  write_file_atomic(o.svg, reliability_svg(report.raw, report.calibrated,
                                           model.classifier.calibration ? model.classifier.calibration->temperature : 1,
                                           "reliability: " + path + " on " + o.data));
  return kExitOk;
}

int run_plot(const PlotCli& o) {
  check_output_path(o.svg);
  check_not_an_input({"--svg", o.svg}, {{"the training log", o.log}, {"--data", o.data}, {"-m", o.model}});
  if (o.reliability) {
    if (!o.log.empty()) throw Error("plot --reliability draws a model on --data; it takes no training log");
    if (o.data.empty()) throw Error("plot --reliability needs --data (labelled, held out: dev or test)");
    return run_reliability(o);
  }
  if (o.log.empty()) throw Error("plot needs a train --log file (or --reliability -m MODEL --data FILE)");
  if (!o.model.empty() || !o.data.empty()) throw Error("-m and --data are for --reliability");
  LineSource src = o.log == "-" ? LineSource::stdin_source() : LineSource::open(o.log);
  std::vector<nlohmann::json> records;
  std::string line;
  std::int64_t n = 0;
  while (src.next(line)) {
    ++n;
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    try {
      records.push_back(nlohmann::json::parse(line));
    } catch (const nlohmann::json::exception& e) {
      throw error_at(o.log, n, std::string("not a JSON record: ") + e.what());
    }
    if (!records.back().is_object() || !records.back().contains("step"))
      throw error_at(o.log, n, "a training record needs at least a \"step\"");
  }
  write_file_atomic(o.svg, training_curves_svg(records, "training curves: " + o.log));
  return kExitOk;
}

}  // namespace

Runner setup_plot(CLI::App& app) {
  auto o = std::make_shared<PlotCli>();
  app.footer(
      "Draw training curves (train and dev loss, dev accuracy and macro-F1 against steps)\n"
      "from the JSON lines of train --log as a self-contained SVG; or, with --reliability, a\n"
      "model's reliability diagram on labelled data (accuracy per bin of the top probability,\n"
      "raw and calibrated, with ECE, Brier and NLL).\n\n"
      "Examples:\n  zibert train --data train.tsv --out m.safetensors --log train.jsonl\n"
      "  zibert plot train.jsonl --svg curves.svg\n"
      "  zibert plot --reliability -m m.safetensors --data test.tsv --svg reliability.svg");
  app.add_option("log", o->log, "The train --log file (- for stdin)");
  app.add_option("--svg", o->svg, "The SVG file to write")->required();
  app.add_flag("--reliability", o->reliability, "Draw -m MODEL's reliability diagram on --data instead");
  add_model_option(app, o->model);
  app.add_option("--data", o->data, "With --reliability: labelled data, held out")->check(CLI::ExistingFile);
  add_threads_option(app, o->threads);
  return [o] { return run_plot(*o); };
}

}  // namespace zibert::cli
