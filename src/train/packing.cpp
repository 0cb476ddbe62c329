#include "zibert/train/packing.hpp"

#include <algorithm>

#include "zibert/base/error.hpp"

namespace zibert {

std::vector<std::vector<std::int32_t>> pack_lines(const std::vector<std::vector<std::int32_t>>& lines,
                                                  std::int64_t max_len, const SpecialIds& specials) {
  if (max_len < 3) throw Error("packing needs max_len of at least 3");
  const auto width = static_cast<std::size_t>(max_len - 2);
  std::vector<std::vector<std::int32_t>> out;
  std::vector<std::int32_t> open;  // the sequence being filled: [CLS] line [SEP] …
  auto close = [&] {
    if (open.size() > 1) out.push_back(std::move(open));
    open.assign(1, specials.cls);
  };
  open.assign(1, specials.cls);
  for (const std::vector<std::int32_t>& line : lines) {
    if (line.empty()) continue;
    if (line.size() > width) {  // whole pieces of it are sequences of their own; the rest stays open
      close();
      std::size_t at = 0;
      for (; line.size() - at > width; at += width) {
        open.insert(open.end(), line.begin() + static_cast<std::ptrdiff_t>(at),
                    line.begin() + static_cast<std::ptrdiff_t>(at + width));
        open.push_back(specials.sep);
        close();
      }
      open.insert(open.end(), line.begin() + static_cast<std::ptrdiff_t>(at), line.end());
      open.push_back(specials.sep);
      continue;
    }
    if (open.size() + line.size() + 1 > static_cast<std::size_t>(max_len)) close();
    open.insert(open.end(), line.begin(), line.end());
    open.push_back(specials.sep);
  }
  close();
  return out;
}

SequenceSet packed_sequences(const std::vector<std::vector<std::int32_t>>& lines, std::int64_t max_len,
                             const SpecialIds& specials) {
  SequenceSet out;
  out.specials = specials;
  for (auto& seq : pack_lines(lines, max_len, specials)) {
    out.lengths.push_back(static_cast<std::int64_t>(seq.size()));
    out.seqs.push_back(std::move(seq));
  }
  return out;
}

}  // namespace zibert
