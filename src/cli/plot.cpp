// zibert plot: training curves from a train --log file.
#include "cli.hpp"
#include "zibert/base/line_source.hpp"
#include "zibert/base/io.hpp"
#include "zibert/report/plot.hpp"

namespace zibert::cli {
namespace {

struct PlotCli {
  std::string log, svg;
};

int run_plot(const PlotCli& o) {
  check_output_path(o.svg);
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
      "from the JSON lines of train --log as a self-contained SVG.\n\n"
      "Example:\n  zibert train --data train.tsv --out m.safetensors --log train.jsonl\n"
      "  zibert plot train.jsonl --svg curves.svg");
  app.add_option("log", o->log, "The train --log file (- for stdin)")->required();
  app.add_option("--svg", o->svg, "The SVG file to write")->required();
  return [o] { return run_plot(*o); };
}

}  // namespace zibert::cli
