// zibert calibrate: fit a model's temperature on held-out labelled data
// (model/calibration.hpp), as train does on its dev set, for a model trained
// without one or for data closer to where it will be used.
#include <cstdio>
#include <filesystem>

#include "cli.hpp"
#include "zibert/base/io.hpp"
#include "zibert/text/dataset.hpp"
#include "zibert/train/calibrate.hpp"

namespace zibert::cli {
namespace {

struct CalibrateCli {
  std::string model, data, out;
  bool quiet = false;
  int threads = 0;
};

int run_calibrate(const CalibrateCli& o) {
  apply_threads(o.threads);
  const std::string path = resolve_model_path(o.model);
  check_output_path(o.out);  // the model itself may be --out: it is rewritten with its temperature
  check_not_an_input({"--out", o.out}, {{"--data", o.data}});
  Model model = load_classifier(path);
  if (model.config.multi_label)
    throw Error(path + ": a multi-label model's sigmoids are not calibrated by a temperature (it scales a softmax)");
  const Dataset data = read_data_option(o.data);
  model.classifier.calibration = calibrate(model, data);
  save_model(o.out, model);
  if (!o.quiet) {
    const Calibration& c = *model.classifier.calibration;
    std::fprintf(stderr,
                 "saved %s: temperature %.4g fitted on %lld examples of %s; NLL %.4f -> %.4f, ECE %.4f -> %.4f, "
                 "Brier %.4f -> %.4f\n",
                 o.out.c_str(), c.temperature, static_cast<long long>(c.examples), data.name.c_str(), c.before.nll,
                 c.after.nll, c.before.ece, c.after.ece, c.before.brier, c.after.brier);
  }
  return kExitOk;
}

}  // namespace

Runner setup_calibrate(CLI::App& app) {
  auto o = std::make_shared<CalibrateCli>();
  app.footer(
      "Fit a classifier's temperature on held-out labelled data (the dev set, not the training data): the T\n"
      "that minimises the data's NLL of softmax(logits / T), stored in the model and applied at inference.\n"
      "It replaces a temperature the model had; the labels it predicts stay the same. train does this on its\n"
      "dev set unless --no-calibration.\n\n"
      "Example:\n"
      "  zibert calibrate -m old.safetensors --data dev.tsv --out old.calibrated.safetensors\n"
      "  zibert eval -m old.calibrated.safetensors --data test.tsv");
  add_required_model_option(app, o->model);
  app.add_option("--data", o->data, "Held-out labelled data (same formats as train), or - for stdin")
      ->required()
      ->check(file_or_stdin());
  app.add_option("--out", o->out, "Where to write the calibrated model (may be the model itself)")->required();
  app.add_flag("-q,--quiet", o->quiet, "Print nothing on success");
  add_threads_option(app, o->threads);
  add_bf16_option(app);
  return [o] { return run_calibrate(*o); };
}

}  // namespace zibert::cli
