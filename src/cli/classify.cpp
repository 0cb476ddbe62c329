// zibert classify: one prediction per input line, streamed in chunks, with
// grep-like filtering (--filter, -c, -q, -n, -H/-h) and whole-file --document.
#include <cstdio>
#include <nlohmann/json.hpp>

#include "cli.hpp"
#include "chunks.hpp"
#include "zibert/base/line_source.hpp"
#include "zibert/infer/predictor.hpp"

namespace zibert::cli {
namespace {

struct ClassifyCli {
  std::vector<std::string> inputs;
  std::string model, format = "tsv", invalid = "error", label;
  double threshold = 0.5;
  bool no_text = false, filter = false, count = false, quiet = false, line_number = false;
  bool with_filename = false, no_filename = false, document = false;
  int threads = 0;
};

// Tabs, CRs, newlines and backslashes are escaped so that a TSV row stays one row.
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

double round4(float v) { return std::round(double(v) * 10000.0) / 10000.0; }


class Classify {
 public:
  Classify(const ClassifyCli& o, const Classifier& model)
      : o_(o), model_(model), predictor_(model, o.threshold), tokenizer_(model.tokenizer) {
    tokenizer_.set_replace_invalid(o.invalid == "replace");
    matching_ = o.filter || o.count || o.quiet;
    if (!o.label.empty()) {
      target_ = model.label_id(o.label);
      if (target_ < 0) throw Error("--label " + o.label + " is not one of the model's labels");
    } else {
      target_ = model.positive_id();
      if (matching_ && target_ < 0)
        throw Error("this model has no positive label; say which label to match with --label");
    }
    show_names_ = o.with_filename || (o.inputs.size() > 1 && !o.no_filename);
  }

  // Returns true when something matched (for the exit status).
  bool run() {
    std::vector<std::string> inputs = o_.inputs.empty() ? std::vector<std::string>{"-"} : o_.inputs;
    for (const std::string& path : inputs) {
      LineSource src = path == "-" ? LineSource::stdin_source() : LineSource::open(path);
      if (o_.document)
        document(src);
      else
        lines(src);
      if (o_.quiet && matches_ > 0) return true;  // like grep -q: the first match settles it
    }
    return matches_ > 0;
  }

 private:
  std::string display(const LineSource& src) const { return display_name(src); }

  void lines(LineSource& src) {
    std::int64_t line_no = 0, file_matches = 0;
    for (bool eof = false; !eof;) {
      Chunk chunk = read_chunk(src, tokenizer_, line_no);
      emit(src, chunk.lines, chunk.ids, chunk.first, file_matches);  // the lines before a bad one are written
      if (chunk.error) std::rethrow_exception(chunk.error);
      eof = chunk.eof;
      if (o_.quiet && matches_ > 0) return;
    }
    if (o_.count && !o_.quiet)
      write_out((show_names_ ? display(src) + ":" : "") + std::to_string(file_matches) + "\n");
  }

  void emit(const LineSource& src, const std::vector<std::string>& chunk,
            const std::vector<std::vector<std::int32_t>>& texts, std::int64_t first, std::int64_t& file_matches) {
    if (chunk.empty()) return;
    std::vector<Prediction> preds = predictor_.predict_ids(texts);
    std::string out;
    for (std::size_t i = 0; i < chunk.size(); ++i) {
      const Prediction& p = preds[i];
      std::int64_t line_no = first + static_cast<std::int64_t>(i);
      if (matching_) {
        if (p.label != target_) continue;
        ++matches_;
        ++file_matches;
        if (o_.quiet || o_.count) continue;
        if (show_names_) out += display(src) + ":";
        if (o_.line_number) out += std::to_string(line_no) + ":";
        out += chunk[i] + "\n";
      } else {
        out += record(p, chunk[i], src, line_no, -1);
      }
    }
    if (!out.empty()) write_out(out);
  }

  // One output record: TSV label<TAB>prob[<TAB>offset]<TAB>text, or JSONL.
  std::string record(const Prediction& p, const std::string& text, const LineSource& src, std::int64_t line_no,
                     std::int64_t offset) const {
    const std::string& label = model_.labels[p.label];
    if (o_.format == "jsonl") {
      nlohmann::ordered_json j;
      if (show_names_ || o_.document) j["file"] = display(src);
      if (line_no > 0) j["line"] = line_no;
      j["label"] = label;
      j["prob"] = round4(p.prob);
      nlohmann::ordered_json probs = nlohmann::ordered_json::object();
      for (std::size_t c = 0; c < model_.labels.size(); ++c) probs[model_.labels[c]] = round4(p.probs[c]);
      j["probs"] = probs;
      if (offset >= 0) j["offset"] = offset;
      if (!o_.no_text && !o_.document) j["text"] = text;
      return j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
    }
    char prob[32];
    std::snprintf(prob, sizeof prob, "%.4f", double(p.prob));
    // A file column only on request (-H): the column layout must not depend on how many files there are.
    std::string out = (o_.with_filename && !o_.document ? display(src) + "\t" : "") + label + "\t" + prob;
    if (offset >= 0) out += "\t" + std::to_string(offset);
    if (o_.document)
      out += "\t" + escape_tsv(display(src));
    else if (!o_.no_text)
      out += "\t" + escape_tsv(text);
    return out + "\n";
  }

  // The whole input as one text; reports the deciding window's character offset.
  void document(LineSource& src) {
    std::string text, line;
    std::int64_t line_no = 0;
    std::vector<std::int32_t> ids;
    // Lines join with one space, as normalising the whole text would join them.
    const std::int32_t space = tokenizer_.vocab().id(U' ');
    while (src.next(line)) {  // line by line, so errors can name the line
      ++line_no;
      std::vector<std::int32_t> part = encode_line(tokenizer_, line, src, line_no);
      if (!ids.empty() && !part.empty()) ids.push_back(space);
      ids.insert(ids.end(), part.begin(), part.end());
    }
    Prediction p = predictor_.predict_ids({ids})[0];
    if (matching_) {
      bool hit = p.label == target_;
      matches_ += hit;
      if (o_.count && !o_.quiet)  // like grep -c: a count for every file, here 0 or 1
        write_out((show_names_ ? display(src) + ":" : "") + (hit ? "1\n" : "0\n"));
      else if (hit && !o_.quiet)  // like grep -l: the names of the matching files
        write_out(display(src) + "\n");
      return;
    }
    write_out(record(p, "", src, 0, p.offset));
  }

  const ClassifyCli& o_;
  const Classifier& model_;
  Predictor predictor_;
  Tokenizer tokenizer_;  // the model's, with --invalid's choice
  bool matching_ = false, show_names_ = false;
  std::int32_t target_ = -1;
  std::int64_t matches_ = 0;
};

int run_classify(const ClassifyCli& o) {
  apply_threads(o.threads);
  Classifier model = load_classifier(o.model);
  if (model.labels.size() != 2 && o.threshold != 0.5)
    throw Error("--threshold applies to binary models only; this one has " + std::to_string(model.labels.size()) +
                " labels");
  Classify classify(o, model);
  bool matched = classify.run();
  if (o.filter || o.count || o.quiet) return matched ? kExitOk : kExitNoMatch;
  return kExitOk;
}

}  // namespace

Runner setup_classify(CLI::App& app) {
  auto o = std::make_shared<ClassifyCli>();
  app.set_help_flag("--help", "Print this help message and exit");  // -h is grep's --no-filename
  app.footer(
      "Classify each line of the input files (or stdin): one output line per input line,\n"
      "label<TAB>probability<TAB>text, in input order, empty lines included. Texts longer than\n"
      "the model's window are split into overlapping windows; a binary model takes the\n"
      "highest P(positive). With --filter, prints the input lines whose prediction is the\n"
      "positive label (or --label), like grep; exit status 0 if something matched, 1 if not,\n"
      "2 on error.\n\n"
      "Examples:\n"
      "  zibert classify notes.txt\n"
      "  cat *.txt | zibert classify --format jsonl - | jq .\n"
      "  zibert classify --filter -n notes.txt menu.txt\n"
      "  tail -f chat.log | zibert classify --filter\n"
      "  if zibert classify --filter -q notes.txt; then echo mentioned; fi\n"
      "  zibert classify --document menu.txt");
  add_inputs_option(app, o->inputs);
  add_model_option(app, o->model);
  app.add_option("--format", o->format, "Output format")->check(CLI::IsMember({"tsv", "jsonl"}))->capture_default_str();
  app.add_flag("--no-text", o->no_text, "Leave the text out of the output");
  add_threshold_option(app, o->threshold);
  add_invalid_option(app, o->invalid);
  app.add_flag("--filter", o->filter, "Print only the lines predicted as the positive label (or --label)");
  app.add_option("--label", o->label, "The label --filter, --count and --quiet match (default: the positive label)");
  app.add_flag("-n,--line-number", o->line_number, "With --filter: prefix each line with its line number");
  app.add_flag("-c,--count", o->count, "Print the number of matching lines (per file) instead of the lines");
  app.add_flag("-q,--quiet", o->quiet, "Print nothing; the exit status says whether anything matched");
  app.add_flag("-H,--with-filename", o->with_filename, "Prefix output with the file name (default with several files)");
  app.add_flag("-h,--no-filename", o->no_filename, "Never prefix output with the file name");
  app.add_flag("--document", o->document,
               "Classify each input file as one text; report the deciding window's character offset");
  add_threads_option(app, o->threads);
  return [o] { return run_classify(*o); };
}

}  // namespace zibert::cli
