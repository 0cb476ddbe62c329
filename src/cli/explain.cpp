// zibert explain: show the query and the aggregation for one text.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "cli.hpp"
#include "zibert/base/line_source.hpp"
#include "zibert/report/explain.hpp"
#include "zibert/base/io.hpp"
#include "zibert/base/utf8.hpp"

namespace zibert::cli {
namespace {

struct ExplainCli {
  std::string model, text, file, svg;
  bool json = false, text_given = false;
  int threads = 0;
};

// "(argument):line:column: invalid UTF-8" for a bad byte of the TEXT argument.
void check_argument_utf8(const std::string& text) {
  const std::int64_t bad = invalid_utf8_offset(text);
  if (bad < 0) return;
  const std::size_t line_start = text.rfind('\n', static_cast<std::size_t>(bad));
  const std::int64_t line = 1 + std::count(text.begin(), text.begin() + bad, '\n');
  const std::int64_t column = line_start == std::string::npos ? bad + 1 : bad - static_cast<std::int64_t>(line_start);
  throw error_at("(argument)", line, column, "invalid UTF-8");
}

// The whole file as one text, its lines joined by spaces.
std::string read_explained_file(const std::string& file) {
  LineSource src = file == "-" ? LineSource::stdin_source() : LineSource::open(file);
  const std::string name = file == "-" ? "(standard input)" : file;
  std::string text, line;
  for (std::int64_t n = 1; src.next(line); ++n) {
    if (const std::int64_t bad = invalid_utf8_offset(line); bad >= 0) throw error_at(name, n, bad + 1, "invalid UTF-8");
    text += (text.empty() ? "" : " ") + line;
  }
  if (is_blank(text))
    throw Error(name + ": no text to explain (the file is empty or every line is blank)");
  return text;
}

int run_explain(const ExplainCli& o) {
  apply_threads(o.threads);
  if (o.text_given == !o.file.empty()) throw Error("explain needs a TEXT or --file FILE (one of them)");
  if (o.text_given && is_blank(o.text))
    throw Error("explain: the TEXT argument is empty; give a text to explain");
  if (o.svg == "-" && o.json) throw Error("--svg - and --json both write to standard output; choose one");
  const bool svg_to_stdout = o.svg == "-";
  if (!o.svg.empty() && !svg_to_stdout) check_output_path(o.svg);
  if (!svg_to_stdout) check_not_an_input({"--svg", o.svg}, {{"--file", o.file}, {"-m", o.model}});
  if (o.text_given) check_argument_utf8(o.text);
  const std::string text = o.text_given ? o.text : read_explained_file(o.file);
  Model model = load_classifier(o.model);
  const std::vector<char32_t> chars = model.tokenizer.prepare(text);
  Explanation e = explain(model, chars);
  std::string out;
  if (svg_to_stdout)
    out = explanation_svg(e, model);
  else {
    if (!o.svg.empty()) write_file_atomic(o.svg, explanation_svg(e, model));
    out = o.json ? explanation_json(e, model).dump() + "\n"
                 : explanation_terminal(e, model, ::isatty(STDOUT_FILENO) && !std::getenv("NO_COLOR"));
  }
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
  CLI::Option* text = app.add_option("text", o->text, "The text to explain");
  app.add_option("--file", o->file, "Explain this file's text instead (- for stdin)");
  add_model_option(app, o->model);
  app.add_option("--svg", o->svg,
                 "Also write attention heatmaps (every layer and head) as SVG; - writes the SVG alone to stdout");
  app.add_flag("--json", o->json, "Print every attention matrix, the tokens, occlusion and the prediction as JSON");
  add_threads_option(app, o->threads);
  add_bf16_option(app);
  return [o, text] {
    o->text_given = text->count() > 0;
    return run_explain(*o);
  };
}

}  // namespace zibert::cli
