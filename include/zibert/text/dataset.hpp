// Labelled data: TSV (with or without a header), fastText and JSONL, detected
// by content (DESIGN §2 train).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "zibert/base/line_source.hpp"

namespace zibert {

struct Example {
  std::string text;
  std::string label;                // a single-label row's label ("" in multi-label data)
  std::vector<std::string> labels;  // multi-label data: the row's labels, in order, none twice (may be none)
  std::string category;  // "" when the data has no category column
  bool outlier = false;  // a text of train --outliers: belongs to no label (label and labels empty)
  std::int64_t line = 0;  // 1-based line in the source file
};

enum class DataFormat { Tsv, FastText, Jsonl };
const char* format_name(DataFormat format);

struct Dataset {
  std::string name;  // file name, for messages
  DataFormat format = DataFormat::Tsv;
  bool has_category = false;
  bool multi_label = false;  // read as multi-label data: rows carry labels, not label
  std::vector<Example> rows;
};

// Reads a whole labelled file. Blank lines are skipped; every other line must
// be a row with a label and a text, or the error names the line. Text must be
// valid UTF-8 (the error gives line and byte).
//
// multi_label reads rows with any number of labels (Example::labels): several
// leading __label__ words in fastText format, a JSON list in JSONL (a string
// is one label, [] none), a comma-separated list in TSV. Without it those
// forms are errors that say so, and a TSV label may contain commas.
Dataset read_dataset(const std::string& path, bool multi_label = false);
Dataset parse_dataset(LineSource& lines, bool multi_label = false);
Dataset parse_dataset(std::string bytes, const std::string& name, bool multi_label = false);  // bytes in memory

// Splits off a seeded fraction as the dev set (used when --dev is not given).
void split_holdout(Dataset& train, Dataset& dev, double fraction, std::uint64_t seed);

}  // namespace zibert
