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
  std::string label;
  std::string category;  // "" when the data has no category column
  std::int64_t line = 0;  // 1-based line in the source file
};

enum class DataFormat { Tsv, FastText, Jsonl };
const char* format_name(DataFormat format);

struct Dataset {
  std::string name;  // file name, for messages
  DataFormat format = DataFormat::Tsv;
  bool has_category = false;
  std::vector<Example> rows;
};

// Reads a whole labelled file. Blank lines are skipped; every other line must
// be a row with a label and a text, or the error names the line. Text must be
// valid UTF-8 (the error gives line and byte).
Dataset read_dataset(const std::string& path);
Dataset parse_dataset(LineSource& lines);
Dataset parse_dataset(std::string bytes, const std::string& name);  // bytes in memory

// Splits off a seeded fraction as the dev set (used when --dev is not given).
void split_holdout(Dataset& train, Dataset& dev, double fraction, std::uint64_t seed);

}  // namespace zibert
