#include "zibert/text/corpus.hpp"

#include "zibert/base/error.hpp"
#include "zibert/base/line_source.hpp"
#include "zibert/base/random.hpp"
#include "zibert/base/utf8.hpp"

namespace zibert {

Corpus read_corpus(LineSource& src) {
  Corpus c;
  c.name = src.name();
  std::string line;
  std::int64_t n = 0;
  while (src.next(line)) {
    ++n;
    if (is_blank(line)) continue;
    const std::int64_t bad = invalid_utf8_offset(line);
    if (bad >= 0) throw error_at(c.name, n, bad + 1, "invalid UTF-8");
    c.lines.push_back(std::move(line));
    c.line_numbers.push_back(n);
  }
  if (c.lines.empty()) throw Error(c.name + ": no text (every line is empty)");
  return c;
}

Corpus read_corpus(const std::string& path) {
  LineSource src = LineSource::open(path);
  return read_corpus(src);
}

Corpus texts_of(const Dataset& data) {
  Corpus c;
  c.name = data.name;
  for (const Example& ex : data.rows) {
    c.lines.push_back(ex.text);
    c.line_numbers.push_back(ex.line);
  }
  return c;
}

void add_outliers(Dataset& data, const Corpus& corpus) {
  for (std::size_t i = 0; i < corpus.lines.size(); ++i) {
    Example ex;
    ex.text = corpus.lines[i];
    ex.line = corpus.line_numbers[i];
    ex.outlier = true;
    data.rows.push_back(std::move(ex));
  }
}

Corpus hold_out(Corpus& corpus, double fraction, std::uint64_t seed) {
  const std::vector<std::uint8_t> is_dev = holdout_mask(corpus.lines.size(), fraction, seed);
  Corpus dev, kept;
  dev.name = corpus.name + " (held out)";
  kept.name = corpus.name;
  for (std::size_t i = 0; i < corpus.lines.size(); ++i) {
    Corpus& into = is_dev[i] ? dev : kept;
    into.lines.push_back(std::move(corpus.lines[i]));
    into.line_numbers.push_back(corpus.line_numbers[i]);
  }
  corpus = std::move(kept);
  return dev;
}

}  // namespace zibert
