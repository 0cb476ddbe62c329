// Raw text for pretraining (zibert pretrain): one text per line, no labels.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "zibert/base/line_source.hpp"
#include "zibert/text/dataset.hpp"

namespace zibert {

struct Corpus {
  std::string name;                  // the file, for messages and the model's record
  std::vector<std::string> lines;    // non-empty lines, in order
  std::vector<std::int64_t> line_numbers;  // 1-based, of each kept line
};

// Every line but the blank ones (whitespace only), which are skipped; invalid
// UTF-8 is an error naming the file, the line and the byte. A corpus without
// a single text is an error.
Corpus read_corpus(LineSource& lines);
Corpus read_corpus(const std::string& path);

// The texts of a labelled set, without their labels (train --pretrain-epochs).
Corpus texts_of(const Dataset& data);

// Appends corpus's texts to a labelled set as outliers (train --outliers):
// rows of no label, with the corpus's line numbers.
void add_outliers(Dataset& data, const Corpus& corpus);

// Moves a seeded fraction of corpus's lines (at least one when it has two or
// more) into a dev corpus named "NAME (held out)"; the rest keep their order.
Corpus hold_out(Corpus& corpus, double fraction, std::uint64_t seed);

}  // namespace zibert
