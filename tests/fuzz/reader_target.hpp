// The body shared by the training-data reader targets: a first line fixes the
// format the reader detects, the fuzzer's bytes follow it.
#pragma once
#include <cstdint>
#include <string>

#include "zibert/text/dataset.hpp"
#include "zibert/base/error.hpp"

inline int fuzz_reader(const char* first_line, const std::uint8_t* data, std::size_t size) {
  std::string text = first_line;
  text.append(reinterpret_cast<const char*>(data), size);
  try {
    zibert::Dataset d = zibert::parse_dataset(text, "fuzz");
    for (const zibert::Example& ex : d.rows)
      if (ex.label.empty() || ex.line < 1) __builtin_trap();
  } catch (const zibert::Error&) {
  }
  try {  // the same bytes as multi-label data: labels instead of label, none empty or twice
    zibert::Dataset d = zibert::parse_dataset(text, "fuzz", /*multi_label=*/true);
    for (const zibert::Example& ex : d.rows) {
      if (!ex.label.empty() || ex.line < 1) __builtin_trap();
      for (std::size_t i = 0; i < ex.labels.size(); ++i) {
        if (ex.labels[i].empty()) __builtin_trap();
        for (std::size_t j = 0; j < i; ++j)
          if (ex.labels[i] == ex.labels[j]) __builtin_trap();
      }
    }
  } catch (const zibert::Error&) {
  }
  return 0;
}
