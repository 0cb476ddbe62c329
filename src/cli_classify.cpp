// zibert classify: one prediction per input line, streamed in chunks.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli.hpp"
#include "zibert/io.hpp"
#include "zibert/predictor.hpp"

namespace zibert::cli {
namespace {

constexpr std::size_t kChunkLines = 2048;

struct ClassifyCli {
  std::vector<std::string> inputs;
  std::string model, format = "tsv", invalid = "error";
  double threshold = 0.5;
  bool no_text = false;
  int threads = 0;
};

// Tabs, CRs and backslashes are escaped so that a TSV row stays one row.
std::string escape_tsv(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    if (c == '\\') out += "\\\\";
    else if (c == '\t') out += "\\t";
    else if (c == '\r') out += "\\r";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

class Writer {
 public:
  Writer(const Classifier& model, const ClassifyCli& o) : model_(model), o_(o) {}
  void write(const std::vector<std::string>& lines, std::int64_t first_line, const std::vector<Prediction>& preds) {
    std::string out;
    for (std::size_t i = 0; i < lines.size(); ++i) {
      const Prediction& p = preds[i];
      const std::string& label = model_.labels[p.label];
      if (o_.format == "jsonl") {
        nlohmann::ordered_json j;
        j["line"] = first_line + static_cast<std::int64_t>(i);
        j["label"] = label;
        j["prob"] = round4(p.prob);
        nlohmann::ordered_json probs = nlohmann::ordered_json::object();
        for (std::size_t c = 0; c < model_.labels.size(); ++c) probs[model_.labels[c]] = round4(p.probs[c]);
        j["probs"] = probs;
        if (!o_.no_text) j["text"] = lines[i];
        out += j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
      } else {
        char prob[32];
        std::snprintf(prob, sizeof prob, "%.4f", double(p.prob));
        out += label;
        out += '\t';
        out += prob;
        if (!o_.no_text) {
          out += '\t';
          out += escape_tsv(lines[i]);
        }
      }
      out += '\n';
    }
    std::fwrite(out.data(), 1, out.size(), stdout);
    std::fflush(stdout);
  }

 private:
  static double round4(float v) { return std::round(double(v) * 10000.0) / 10000.0; }
  const Classifier& model_;
  const ClassifyCli& o_;
};

void classify_stream(std::istream& in, const std::string& name, Predictor& predictor, const Normalization& norm,
                     Writer& writer) {
  std::vector<std::string> lines;
  std::vector<std::vector<char32_t>> texts;
  std::int64_t line_no = 0, chunk_first = 1;
  auto flush = [&] {
    if (lines.empty()) return;
    writer.write(lines, chunk_first, predictor.predict(texts));
    chunk_first = line_no + 1;
    lines.clear();
    texts.clear();
  };
  std::string line;
  while (std::getline(in, line)) {
    ++line_no;
    if (line_no == 1 && line.rfind("\xEF\xBB\xBF", 0) == 0) line.erase(0, 3);  // UTF-8 BOM
    if (!line.empty() && line.back() == '\r') line.pop_back();
    try {
      texts.push_back(normalize(line, norm));
    } catch (const Utf8Error& e) {
      flush();  // everything before the bad line is written
      throw error_at(name, line_no, std::string(e.what()) + " (--invalid replace carries on)");
    }
    lines.push_back(std::move(line));
    if (lines.size() >= kChunkLines) flush();
  }
  if (in.bad()) throw Error(name + ": read failed");
  flush();
}

int run_classify(const ClassifyCli& o) {
  apply_threads(o.threads);
  Classifier model = load_classifier(o.model);
  if (model.labels.size() != 2 && o.threshold != 0.5)
    throw Error("--threshold applies to binary models only; this one has " + std::to_string(model.labels.size()) +
                " labels");
  Normalization norm = model.tokenizer.normalization();
  norm.replace_invalid = o.invalid == "replace";
  Predictor predictor(model, o.threshold);
  Writer writer(model, o);
  std::vector<std::string> inputs = o.inputs.empty() ? std::vector<std::string>{"-"} : o.inputs;
  for (const std::string& path : inputs) {
    if (path == "-") {
      classify_stream(std::cin, "<stdin>", predictor, norm, writer);
      continue;
    }
    std::ifstream in = open_input(path);
    classify_stream(in, path, predictor, norm, writer);
  }
  return kExitOk;
}

}  // namespace

Runner setup_classify(CLI::App& app) {
  auto o = std::make_shared<ClassifyCli>();
  app.description(
      "Classify each line of the input files (or stdin): one output line per input line,\n"
      "label<TAB>probability<TAB>text. Texts longer than the model's window are split into\n"
      "overlapping windows; a binary model takes the highest P(positive).\n\n"
      "Examples:\n  zibert classify notes.txt\n  cat *.txt | zibert classify --format jsonl -");
  app.add_option("inputs", o->inputs, "Files to read; - or none for stdin");
  add_model_option(app, o->model);
  app.add_option("--format", o->format, "Output format")->check(CLI::IsMember({"tsv", "jsonl"}))->capture_default_str();
  app.add_flag("--no-text", o->no_text, "Leave the text out of the output");
  add_threshold_option(app, o->threshold);
  app.add_option("--invalid", o->invalid, "Invalid UTF-8: error, or replace bad bytes with U+FFFD")
      ->check(CLI::IsMember({"error", "replace"}))->capture_default_str();
  add_threads_option(app, o->threads);
  return [o] { return run_classify(*o); };
}

}  // namespace zibert::cli
