// zibert explain: show the query and the aggregation for one text.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "cli.hpp"
#include "zibert/base/line_source.hpp"
#include "zibert/report/explain.hpp"
#include "zibert/base/io.hpp"

namespace zibert::cli {
namespace {

struct ExplainCli {
  std::string model, text, file, svg;
  bool json = false;
  int threads = 0;
};

int run_explain(const ExplainCli& o) {
  apply_threads(o.threads);
  if (o.text.empty() == o.file.empty()) throw Error("explain needs a TEXT or --file FILE (one of them)");
  if (!o.svg.empty()) check_output_path(o.svg);
  check_not_an_input({"--svg", o.svg}, {{"--file", o.file}, {"-m", o.model}});
  Classifier model = load_classifier(o.model);
  std::string text = o.text;
  if (!o.file.empty()) {  // the whole file is one text, lines joined by spaces
    LineSource src = o.file == "-" ? LineSource::stdin_source() : LineSource::open(o.file);
    std::string line;
    while (src.next(line)) text += (text.empty() ? "" : " ") + line;
  }
  std::vector<char32_t> chars;
  try {
    chars = normalize(text, model.tokenizer.normalization());
  } catch (const Utf8Error& e) {
    throw Error((o.file.empty() ? std::string("TEXT") : o.file) + ": invalid UTF-8 at byte " + std::to_string(e.byte));
  }
  Explanation e = explain(model, chars);
  if (!o.svg.empty()) write_file_atomic(o.svg, explanation_svg(e, model));
  std::string out = o.json ? explanation_json(e, model).dump() + "\n"
                           : explanation_terminal(e, model, ::isatty(STDOUT_FILENO) && !std::getenv("NO_COLOR"));
  std::fwrite(out.data(), 1, out.size(), stdout);
  return kExitOk;
}

}  // namespace

Runner setup_explain(CLI::App& app) {
  auto o = std::make_shared<ExplainCli>();
  app.footer(
      "Show what [CLS] queried and aggregated for one text: the [CLS] row of every layer's\n"
      "attention, per head and averaged (shaded characters on a terminal, numbers otherwise),\n"
      "the prediction, and occlusion: the drop in P(positive) when each character alone\n"
      "becomes [UNK]. Long texts are explained on the window that decided the prediction.\n\n"
      "Examples:\n  zibert explain \"他们点了一坛佛跳墙\"\n"
      "  zibert explain --svg attention.svg \"他们点了一坛佛跳墙\"\n"
      "  zibert explain --json --file review.txt | jq .occlusion");
  app.add_option("text", o->text, "The text to explain");
  app.add_option("--file", o->file, "Explain this file's text instead (- for stdin)");
  add_model_option(app, o->model);
  app.add_option("--svg", o->svg, "Also write attention heatmaps (every layer and head) as SVG");
  app.add_flag("--json", o->json, "Print every attention matrix, the tokens, occlusion and the prediction as JSON");
  add_threads_option(app, o->threads);
  return [o] { return run_explain(*o); };
}

}  // namespace zibert::cli
