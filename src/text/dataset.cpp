#include "zibert/text/dataset.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "zibert/base/error.hpp"
#include "zibert/base/io.hpp"
#include "zibert/base/line_source.hpp"
#include "zibert/base/random.hpp"
#include "zibert/text/tokenizer.hpp"

namespace zibert {

const char* format_name(DataFormat format) {
  switch (format) {
    case DataFormat::Tsv: return "tsv";
    case DataFormat::FastText: return "fasttext";
    case DataFormat::Jsonl: return "jsonl";
  }
  return "?";
}

namespace {

std::vector<std::string> split_tabs(const std::string& s) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (true) {
    std::size_t tab = s.find('\t', start);
    out.push_back(s.substr(start, tab == std::string::npos ? std::string::npos : tab - start));
    if (tab == std::string::npos) return out;
    start = tab + 1;
  }
}

std::string lower_trim(std::string s) {
  while (!s.empty() && s.back() == ' ') s.pop_back();
  while (!s.empty() && s.front() == ' ') s.erase(s.begin());
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

struct TsvColumns {
  int label = 0, text = 1, category = -1;
  std::size_t count = 0;  // 0: no header, 2 or 3 columns allowed
};

// A first row that names a "label" and a "text" column is a header.
bool parse_header(const std::string& line, TsvColumns& cols) {
  std::vector<std::string> fields = split_tabs(line);
  int label = -1, text = -1, category = -1;
  for (std::size_t i = 0; i < fields.size(); ++i) {
    std::string f = lower_trim(fields[i]);
    if (f == "label") label = static_cast<int>(i);
    if (f == "text") text = static_cast<int>(i);
    if (f == "category") category = static_cast<int>(i);
  }
  if (label < 0 || text < 0) return false;
  cols = {label, text, category, fields.size()};
  return true;
}

Example parse_tsv(const std::string& line, const TsvColumns& cols, const std::string& name, std::int64_t n) {
  std::vector<std::string> fields = split_tabs(line);
  Example ex;
  ex.line = n;
  if (cols.count == 0) {
    if (fields.size() < 2) throw error_at(name, n, "expected label<TAB>text, found no tab");
    if (fields.size() > 3) throw error_at(name, n, "expected label<TAB>text[<TAB>category], found " +
                                                       std::to_string(fields.size()) + " columns");
    ex.label = fields[0];
    ex.text = fields[1];
    if (fields.size() == 3) ex.category = fields[2];
  } else {
    if (fields.size() != cols.count)
      throw error_at(name, n, "expected " + std::to_string(cols.count) + " tab-separated columns as the header says, found " +
                                  std::to_string(fields.size()));
    ex.label = fields[cols.label];
    ex.text = fields[cols.text];
    if (cols.category >= 0) ex.category = fields[cols.category];
  }
  return ex;
}

// Adds label to a multi-label row unless it is there already.
void add_label(Example& ex, std::string label, const std::string& name, std::int64_t n) {
  if (label.empty()) throw error_at(name, n, "an empty label in the row's labels");
  if (std::find(ex.labels.begin(), ex.labels.end(), label) == ex.labels.end()) ex.labels.push_back(std::move(label));
}

// "a,b, c" → a, b, c (a multi-label TSV row's label column).
void split_label_list(Example& ex, const std::string& name, std::int64_t n) {
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = ex.label.find(',', start);
    std::string part = ex.label.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    while (!part.empty() && part.back() == ' ') part.pop_back();
    while (!part.empty() && part.front() == ' ') part.erase(part.begin());
    add_label(ex, std::move(part), name, n);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  ex.label.clear();
}

Example parse_fasttext(const std::string& line, bool multi_label, const std::string& name, std::int64_t n) {
  static const std::string prefix = "__label__";
  if (line.rfind(prefix, 0) != 0) throw error_at(name, n, "expected a __label__ prefix (fastText format)");
  Example ex;
  ex.line = n;
  std::size_t at = 0;
  do {  // each leading __label__ word is a label
    const std::size_t space = line.find_first_of(" \t", at);
    std::string label = line.substr(at + prefix.size(), space == std::string::npos ? std::string::npos : space - at - prefix.size());
    at = space == std::string::npos ? line.size() : space + 1;
    if (!multi_label && !ex.label.empty())
      throw error_at(name, n, "more than one __label__: multi-label data needs train --multi-label");
    if (multi_label)
      add_label(ex, std::move(label), name, n);
    else
      ex.label = std::move(label);
  } while (line.compare(at, prefix.size(), prefix) == 0);
  ex.text = line.substr(at);
  return ex;
}

std::string label_string(const nlohmann::json& label, const std::string& name, std::int64_t n) {
  if (label.is_string()) return label.get<std::string>();
  if (label.is_number_integer() || label.is_boolean()) return label.dump();
  throw error_at(name, n, "label must be a string, an integer or a boolean");
}

Example parse_jsonl(const std::string& line, bool multi_label, const std::string& name, std::int64_t n) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(line);
  } catch (const nlohmann::json::exception& e) {
    throw error_at(name, n, std::string("not valid JSON: ") + e.what());
  }
  if (!j.is_object()) throw error_at(name, n, "expected a JSON object {\"text\":…,\"label\":…}");
  Example ex;
  ex.line = n;
  if (!j.contains("text") || !j["text"].is_string()) throw error_at(name, n, "row has no text (a \"text\" string)");
  ex.text = j["text"].get<std::string>();
  if (!j.contains("label")) throw error_at(name, n, "row has no label");
  const auto& label = j["label"];
  if (label.is_array() && !multi_label)
    throw error_at(name, n, "label is a list: multi-label data needs train --multi-label");
  if (!multi_label)
    ex.label = label_string(label, name, n);
  else if (label.is_array())
    for (const auto& one : label) add_label(ex, label_string(one, name, n), name, n);
  else
    add_label(ex, label_string(label, name, n), name, n);
  if (j.contains("category")) {
    if (!j["category"].is_string()) throw error_at(name, n, "category must be a string");
    ex.category = j["category"].get<std::string>();
  }
  return ex;
}

}  // namespace

Dataset read_dataset(const std::string& path, bool multi_label) {
  LineSource src = LineSource::open(path);
  return parse_dataset(src, multi_label);
}

Dataset parse_dataset(std::string bytes, const std::string& name, bool multi_label) {
  LineSource src = LineSource::from_bytes(std::move(bytes), name);
  return parse_dataset(src, multi_label);
}

Dataset parse_dataset(LineSource& src, bool multi_label) {
  Dataset data;
  const std::string& name = src.name();
  data.name = name;
  data.multi_label = multi_label;
  std::string line;
  std::int64_t n = 0;
  bool detected = false;
  TsvColumns cols;
  while (src.next(line)) {
    ++n;
    if (is_blank(line)) continue;
    std::int64_t bad = invalid_utf8_offset(line);
    if (bad >= 0) throw error_at(name, n, bad + 1, "invalid UTF-8");
    if (!detected) {
      detected = true;
      if (line.front() == '{')
        data.format = DataFormat::Jsonl;
      else if (line.rfind("__label__", 0) == 0)
        data.format = DataFormat::FastText;
      else if (parse_header(line, cols)) {
        data.has_category = cols.category >= 0;
        continue;
      }
    }
    Example ex = data.format == DataFormat::Jsonl      ? parse_jsonl(line, multi_label, name, n)
                 : data.format == DataFormat::FastText ? parse_fasttext(line, multi_label, name, n)
                                                       : parse_tsv(line, cols, name, n);
    if (data.format == DataFormat::Tsv && ex.label == "[]")
      throw error_at(name, n, multi_label ? "a label written [] in TSV: leave the label field empty for a row of no labels"
                                          : "a label written [] in TSV: a row of no labels needs train --multi-label "
                                            "and an empty label field");
    if (data.format == DataFormat::Tsv && multi_label && !ex.label.empty())
      split_label_list(ex, name, n);  // an empty label field: a row of no labels
    if (!multi_label && ex.label.empty())
      throw error_at(name, n, data.format == DataFormat::Tsv
                                  ? "row has no label (an empty label field means no labels only under --multi-label)"
                                  : "row has no label");
    if (is_blank(ex.text)) throw error_at(name, n, "row has no text");
    if (!ex.category.empty()) data.has_category = true;
    data.rows.push_back(std::move(ex));
  }
  if (data.rows.empty()) throw Error(name + ": no labelled rows");
  return data;
}

void split_holdout(Dataset& train, Dataset& dev, double fraction, std::uint64_t seed) {
  const std::vector<std::uint8_t> is_dev = holdout_mask(train.rows.size(), fraction, seed);
  dev.name = train.name + " (held out)";
  dev.format = train.format;
  dev.has_category = train.has_category;
  dev.multi_label = train.multi_label;
  dev.rows.clear();
  std::vector<Example> kept;
  for (std::size_t i = 0; i < train.rows.size(); ++i)
    (is_dev[i] ? dev.rows : kept).push_back(std::move(train.rows[i]));
  train.rows = std::move(kept);
}

}  // namespace zibert
