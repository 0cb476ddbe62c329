// zibert classify: one prediction per input line, streamed in chunks, with
// grep-like filtering (--filter, -v, -c, -q, -n, -H/-h), fastText's top
// labels (-k, a multi-class --threshold) and whole-file --document.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "cli.hpp"
#include "chunks.hpp"
#include "zibert/base/line_source.hpp"
#include "zibert/base/progress.hpp"
#include "zibert/infer/predictor.hpp"

namespace zibert::cli {
namespace {

struct ClassifyCli {
  std::vector<std::string> inputs;
  std::string model, format = "tsv", invalid = "error", label;
  double threshold = 0.5;
  bool threshold_given = false, line_offset_given = false;
  int top_k = 0;  // -k: 0 when not given
  bool no_text = false, filter = false, count = false, quiet = false, line_number = false;
  bool with_filename = false, no_filename = false, document = false, invert = false, raw_probs = false;
  bool progress = false;
  int threads = 0;
  std::int64_t line_offset = 0;  // --line-offset: each input's first line is line_offset + 1
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

// ln p − ln(rest), rounded to 4 decimals; ±1000 stands for a probability
// of exactly 1 (rest 0) or 0.
double rounded_log_odds(double p, double rest) {
  if (rest <= 0) return 1000;
  if (p <= 0) return -1000;
  return std::round((std::log(p) - std::log(rest)) * 10000.0) / 10000.0;
}

// The predicted label's log-odds, with 1 − p summed from the other labels'
// probabilities (exact where 1 − p in float would round to 0).
double log_odds(const Prediction& p) {
  double rest = 0;
  for (std::size_t c = 0; c < p.probs.size(); ++c)
    if (static_cast<std::int32_t>(c) != p.label) rest += p.probs[c];
  return rounded_log_odds(p.prob, rest);
}

// A multi-label prediction's log-odds for one label (1 − p is exact in double).
double sigmoid_log_odds(float p) { return rounded_log_odds(p, 1.0 - double(p)); }

class Classify {
 public:
  Classify(const ClassifyCli& o, const Model& model)
      : o_(o), model_(model), predictor_(model, o.threshold), tokenizer_(model.tokenizer) {
    predictor_.set_raw_probs(o.raw_probs);
    tokenizer_.set_replace_invalid(o.invalid == "replace");
    matching_ = o.filter || o.count || o.quiet;
    if (!o.label.empty()) {
      target_ = model.classifier.label_id(o.label);
      if (target_ < 0) throw Error("--label " + o.label + " is not one of the model's labels");
    } else {
      target_ = model.classifier.positive_id();
      if (matching_ && target_ < 0)
        throw Error(model.config.multi_label
                        ? "a multi-label model has no positive label; say which label to match with --label"
                        : "this model has no positive label; say which label to match with --label");
    }
    show_names_ = o.with_filename || (o.inputs.size() > 1 && !o.no_filename);
    multi_label_ = model.config.multi_label;
    label_threshold_ = o.threshold_given && !model.classifier.binary();
    listing_ = o.top_k > 0 || (label_threshold_ && !multi_label_);  // a multi-label record lists its labels anyway
  }

  // Returns true when something matched (for the exit status).
  bool run() {
    std::vector<std::string> inputs = o_.inputs.empty() ? std::vector<std::string>{"-"} : o_.inputs;
    for (const std::string& path : inputs) {
      LineSource src = open_input(path);
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
    std::int64_t line_no = o_.line_offset, file_matches = 0;
    InputProgress progress(InputProgress::wanted(o_.progress, src));
    const bool whole = for_each_chunk(src, tokenizer_, line_no, [&](const Chunk& chunk) {
      emit(src, chunk.lines, chunk.ids, chunk.first, file_matches);  // the lines before a bad one are written
      if (o_.quiet && matches_ > 0) return false;
      progress.update(src, line_no - o_.line_offset);
      return true;
    });
    if (!whole) return;
    progress.finish(src, line_no - o_.line_offset);
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
        if (matches(p) == o_.invert) continue;
        ++matches_;
        ++file_matches;
        if (o_.quiet || o_.count) continue;
        if (o_.format == "jsonl") {  // the matching lines' records
          out += record(p, chunk[i], src, line_no, -1);
          continue;
        }
        if (show_names_) out += display(src) + ":";
        if (o_.line_number) out += std::to_string(line_no) + ":";
        out += chunk[i] + "\n";
      } else {
        out += record(p, chunk[i], src, line_no, -1);
      }
    }
    if (!out.empty()) write_out(out);
  }

  // Whether a prediction is the label --filter, -c and -q look for (a
  // multi-label prediction: whether its labels include it).
  bool matches(const Prediction& p) const {
    if (multi_label_) return std::find(p.labels.begin(), p.labels.end(), target_) != p.labels.end();
    return p.label == target_;
  }

  // The labels a record lists with -k or a multi-class --threshold: the
  // decided label first, then by probability, k of them (1 without -k),
  // leaving out those below a multi-class model's threshold.
  std::vector<std::int32_t> listed(const Prediction& p) const {
    std::vector<std::int32_t> order(p.probs.size());
    for (std::size_t c = 0; c < order.size(); ++c) order[c] = static_cast<std::int32_t>(c);
    std::stable_sort(order.begin(), order.end(), [&](std::int32_t a, std::int32_t b) {
      if ((a == p.label) != (b == p.label)) return a == p.label;
      return p.probs[a] > p.probs[b];
    });
    order.resize(std::min(order.size(), static_cast<std::size_t>(std::max(o_.top_k, 1))));
    if (label_threshold_)
      order.erase(std::remove_if(order.begin(), order.end(), [&](std::int32_t c) { return p.probs[c] < o_.threshold; }),
                  order.end());
    return order;
  }

  // One output record: TSV label<TAB>prob[<TAB>offset]<TAB>text (with -k,
  // k label<TAB>prob pairs, empty where fewer are listed; a multi-label
  // model's labels and their probabilities comma-separated), or JSONL.
  std::string record(const Prediction& p, const std::string& text, const LineSource& src, std::int64_t line_no,
                     std::int64_t offset) const {
    const std::vector<std::int32_t> shown = listing_ ? listed(p) : multi_label_ ? p.labels : std::vector<std::int32_t>{p.label};
    if (o_.format == "jsonl") {
      nlohmann::ordered_json j;
      if (show_names_ || o_.document) j["file"] = display(src);
      if (line_no > 0) j["line"] = line_no;
      if (multi_label_) {  // the labels, and each label's log-odds next to its probability
        nlohmann::ordered_json names = nlohmann::ordered_json::array(), logits = nlohmann::ordered_json::object();
        for (std::int32_t c : p.labels) names.push_back(model_.classifier.labels[c]);
        j["labels"] = names;
        for (std::size_t c = 0; c < model_.classifier.labels.size(); ++c) logits[model_.classifier.labels[c]] = sigmoid_log_odds(p.probs[c]);
        j["logits"] = logits;
      } else if (shown.empty()) {  // a multi-class threshold no label reached
        j["label"] = nullptr;
        j["prob"] = nullptr;
      } else {
        j["label"] = model_.classifier.labels[shown[0]];
        j["prob"] = round4(p.probs[shown[0]]);
      }
      if (!multi_label_) j["logit"] = log_odds(p);
      if (listing_) {
        nlohmann::ordered_json top = nlohmann::ordered_json::array();
        for (std::int32_t c : shown) top.push_back({{"label", model_.classifier.labels[c]}, {"prob", round4(p.probs[c])}});
        j["top"] = top;
      }
      nlohmann::ordered_json probs = nlohmann::ordered_json::object();
      for (std::size_t c = 0; c < model_.classifier.labels.size(); ++c) probs[model_.classifier.labels[c]] = round4(p.probs[c]);
      j["probs"] = probs;
      if (offset >= 0) j["offset"] = offset;
      if (!o_.no_text && !o_.document) j["text"] = text;
      return j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
    }
    // A file column only on request (-H): the column layout must not depend on how many files there are.
    std::string out = (o_.with_filename && !o_.document ? display(src) + "\t" : "") +
                      (o_.line_number ? std::to_string(line_no) + "\t" : "");
    if (multi_label_ && !listing_) {  // a,b<TAB>0.9100,0.8000
      std::string names, probs;
      for (std::int32_t c : shown) {
        char prob[32];
        std::snprintf(prob, sizeof prob, "%s%.4f", probs.empty() ? "" : ",", double(p.probs[c]));
        names += (names.empty() ? "" : ",") + model_.classifier.labels[c];
        probs += prob;
      }
      out += names + "\t" + probs;
    }
    // -k past the label count lists every label: as many pairs as labels.
    const std::size_t listed = std::min(static_cast<std::size_t>(std::max(o_.top_k, 1)), model_.classifier.labels.size());
    const std::size_t pairs = multi_label_ && !listing_ ? 0 : listing_ ? listed : 1;
    for (std::size_t i = 0; i < pairs; ++i) {
      if (i > 0) out += "\t";
      if (i >= shown.size()) {
        out += "\t";
        continue;
      }
      char prob[32];
      std::snprintf(prob, sizeof prob, "%.4f", double(p.probs[shown[i]]));
      out += model_.classifier.labels[shown[i]] + "\t" + prob;
    }
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
      bool hit = matches(p) != o_.invert;
      matches_ += hit;
      if (o_.count && !o_.quiet)  // like grep -c: a count for every file, here 0 or 1
        write_out((show_names_ ? display(src) + ":" : "") + (hit ? "1\n" : "0\n"));
      else if (hit && !o_.quiet)  // like grep -l: the names of the matching files, or their records
        write_out(o_.format == "jsonl" ? record(p, "", src, 0, p.offset) : display(src) + "\n");
      return;
    }
    write_out(record(p, "", src, 0, p.offset));
  }

  const ClassifyCli& o_;
  const Model& model_;
  Predictor predictor_;
  Tokenizer tokenizer_;  // the model's, with --invalid's choice
  bool matching_ = false, show_names_ = false;
  bool multi_label_ = false;      // one sigmoid per label: a record lists the labels at or above the threshold
  bool label_threshold_ = false;  // --threshold on a multi-class model: which labels records list
  bool listing_ = false;          // -k or label_threshold_
  std::int32_t target_ = -1;
  std::int64_t matches_ = 0;
};

// Combinations of flags where one would do nothing are refused, so that no
// flag is silently ignored.
void check_flags(const ClassifyCli& o) {
  const bool matching = o.filter || o.count || o.quiet;
  auto refuse = [](const std::string& why) { throw Error(why); };
  if (o.invert && !matching) refuse("-v/--invert-match inverts what --filter, -c or -q match; add one of them");
  if (!o.label.empty() && !matching)
    refuse("--label chooses what --filter, -c and -q match; without them every line's label is printed");
  if (o.count && o.quiet) refuse("-c/--count and -q/--quiet: -q prints nothing, so choose one");
  if (o.format == "jsonl" && (o.count || o.quiet)) refuse("--format jsonl: -c and -q print counts or nothing, not records");
  if (o.with_filename && o.quiet) refuse("-H/--with-filename: -q prints nothing");
  if (o.line_number && (o.count || o.quiet)) refuse("-n/--line-number: -c and -q print no lines");
  if (o.line_number && o.document) refuse("-n/--line-number: --document classifies whole files, which have no line numbers");
  if (o.no_text && o.document) refuse("--no-text: --document prints no text already (a file's name stands for it)");
  if (o.no_text && (o.count || o.quiet)) refuse("--no-text: -c and -q print no text already (counts or nothing)");
  if (o.line_offset_given && o.document)
    refuse("--line-offset numbers the lines of a block of a larger input; --document classifies whole files");
  if (o.top_k > 0 && (o.count || o.quiet || (o.filter && o.format == "tsv")))
    refuse("-k/--top-k lists labels in records; --filter, -c and -q match the decided label and print no records "
           "(--format jsonl --filter prints records)");
  if (o.no_text && o.filter && o.format == "tsv")
    refuse("--no-text: --filter prints the matching lines themselves; for records without their text use "
           "--format jsonl --no-text");
}

int run_classify(const ClassifyCli& o) {
  check_flags(o);
  apply_threads(o.threads);
  Model model = load_classifier(o.model, o.quiet);
  if (!model.classifier.binary() && !model.config.multi_label && o.threshold_given &&
      (o.count || o.quiet || (o.filter && o.format == "tsv")))
    throw Error("--threshold on a multi-class model chooses the labels a record lists (fastText's predict-prob); "
                "--filter, -c and -q match the most probable label, so it would do nothing here");
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
      "positive label (or --label; -v: the others), like grep, or their records with\n"
      "--format jsonl; exit status 0 if something matched, 1 if not, 2 on error. A flag that\n"
      "would do nothing with the others given is refused (exit status 2).\n\n"
      "Examples:\n"
      "  zibert classify notes.txt\n"
      "  cat *.txt | zibert classify --format jsonl - | jq .\n"
      "  zibert classify --filter -n notes.txt menu.txt\n"
      "  zibert classify --filter -v notes.txt          # the lines that do not mention it\n"
      "  tail -f chat.log | zibert classify --filter      # runs until Ctrl-C\n"
      "  if zibert classify --filter -q notes.txt; then echo mentioned; fi\n"
      "  zibert classify --document menu.txt\n"
      "  zibert classify --bf16 notes.txt                 # bfloat16 products: faster on CPUs with AMX");
  add_inputs_option(app, o->inputs);
  add_model_option(app, o->model);
  app.add_option("--format", o->format, "Output format")->check(CLI::IsMember({"tsv", "jsonl"}))->capture_default_str();
  app.add_flag("--no-text", o->no_text, "Leave the text out of the output");
  CLI::Option* threshold = add_threshold_option(app, o->threshold);
  threshold->description(
      "Binary models: P(positive) needed for the positive label. Multi-class: list the labels with P >= it (with -k, "
      "at most k), as fastText's predict-prob. Multi-label: the labels a text gets (P >= it, else the most probable)");
  app.add_option("-k,--top-k", o->top_k, "List the k most probable labels with their probabilities")
      ->check(CLI::Range(1, 1 << 20));
  app.add_flag("--raw-probs", o->raw_probs,
               "The network's raw probabilities, not the calibrated ones (a model trained with a temperature)");
  add_invalid_option(app, o->invalid);
  app.add_flag("--filter", o->filter, "Print only the lines predicted as the positive label (or --label)");
  app.add_option("--label", o->label, "The label --filter, --count and --quiet match (default: the positive label)");
  app.add_flag("-v,--invert-match", o->invert, "With --filter, -c or -q: match the lines that are not the label");
  app.add_flag("-n,--line-number", o->line_number,
               "Prefix each line with its line number (--filter: N:line; TSV: a first column; JSONL has \"line\")");
  app.add_flag("-c,--count", o->count, "Print the number of matching lines (per file) instead of the lines");
  app.add_flag("-q,--quiet", o->quiet, "Print nothing; the exit status says whether anything matched");
  CLI::Option* with_name = app.add_flag("-H,--with-filename", o->with_filename,
                                        "Prefix output with the file name (default with several files)");
  app.add_flag("-h,--no-filename", o->no_filename, "Never prefix output with the file name")->excludes(with_name);
  app.add_flag("--document", o->document,
               "Classify each input file as one text; report the deciding window's character offset");
  app.add_flag("--progress", o->progress,
               "Show progress on stderr (bytes of the file, lines/s, ETA) even when stderr is not a terminal "
               "(on a terminal it is shown anyway)");
  CLI::Option* offset = add_line_offset_option(app, o->line_offset);
  add_threads_option(app, o->threads);
  add_bf16_option(app);
  return [o, threshold, offset] {
    o->threshold_given = threshold->count() > 0;
    o->line_offset_given = offset->count() > 0;
    return run_classify(*o);
  };
}

}  // namespace zibert::cli
