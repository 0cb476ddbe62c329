#include "zibert/model/batch.hpp"

#include <algorithm>
#include <numeric>

#include "zibert/base/random.hpp"
#include "zibert/text/vocab.hpp"

namespace zibert {

void MaskedBatch::part_into(Index from, Index count, MaskedBatch& out) const {
  batch.part_into(from, count, out.batch, false);
  const auto lo = static_cast<std::int32_t>(from * batch.seq), hi = static_cast<std::int32_t>((from + count) * batch.seq);
  out.positions.clear();
  out.targets.clear();
  for (std::size_t i = 0; i < positions.size(); ++i)
    if (positions[i] >= lo && positions[i] < hi) {
      out.positions.push_back(positions[i] - lo);
      if (!targets.empty()) out.targets.push_back(targets[i]);
    }
}

Batch Batch::part(Index from, Index count, bool with_labels) const {
  Batch out;
  part_into(from, count, out, with_labels);
  return out;
}

void Batch::part_into(Index from, Index count, Batch& out, bool with_labels) const {
  out.size = count;
  out.seq = seq;
  out.first = first + from;
  out.label_smoothing = label_smoothing;
  out.ids.assign(ids.begin() + from * seq, ids.begin() + (from + count) * seq);
  if (with_labels && !labels.empty())
    out.labels.assign(labels.begin() + from, labels.begin() + from + count);
  else
    out.labels.clear();
  if (with_labels && !targets.empty()) {
    const std::size_t k = targets.size() / static_cast<std::size_t>(size);
    out.targets.assign(targets.begin() + from * k, targets.begin() + (from + count) * k);
  } else {
    out.targets.clear();
  }
  out.soft.temperature = soft.temperature;
  out.soft.alpha = soft.alpha;
  if (with_labels && !soft.probs.empty()) {
    const std::size_t k = soft.probs.size() / static_cast<std::size_t>(size);
    out.soft.probs.assign(soft.probs.begin() + from * k, soft.probs.begin() + (from + count) * k);
  } else {
    out.soft.probs.clear();
  }
}

std::vector<std::int32_t> with_specials(const std::vector<std::int32_t>& ids, std::int64_t max_len,
                                        const SpecialIds& specials) {
  std::size_t keep = std::min<std::size_t>(ids.size(), static_cast<std::size_t>(max_len - 2));
  std::vector<std::int32_t> out;
  out.reserve(keep + 2);
  out.push_back(specials.cls);
  out.insert(out.end(), ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(keep));
  out.push_back(specials.sep);
  return out;
}

void SequenceSet::add(const std::vector<std::int32_t>& ids, std::int32_t label, std::int64_t max_len) {
  if (static_cast<std::int64_t>(ids.size()) > max_len - 2) ++truncated;
  seqs.push_back(with_specials(ids, max_len, specials));
  labels.push_back(label);
  lengths.push_back(static_cast<std::int64_t>(seqs.back().size()));
}

void SequenceSet::add(const std::vector<std::int32_t>& ids, std::vector<std::uint8_t> row_targets, std::int64_t max_len) {
  if (static_cast<std::int64_t>(ids.size()) > max_len - 2) ++truncated;
  seqs.push_back(with_specials(ids, max_len, specials));
  targets.push_back(std::move(row_targets));
  lengths.push_back(static_cast<std::int64_t>(seqs.back().size()));
}

Batch batch_of(const SequenceSet& set, const std::vector<std::size_t>& members, bool labelled) {
  std::vector<const std::vector<std::int32_t>*> seqs;
  std::vector<std::int32_t> labels;
  for (std::size_t i : members) {
    seqs.push_back(&set.seqs[i]);
    if (labelled && !set.labels.empty()) labels.push_back(set.labels[i]);
  }
  Batch batch = pack_batch(seqs, labels);
  if (labelled && !set.targets.empty())
    for (std::size_t i : members) batch.targets.insert(batch.targets.end(), set.targets[i].begin(), set.targets[i].end());
  return batch;
}

std::vector<std::int64_t> window_starts(std::int64_t length, std::int64_t width) {
  std::vector<std::int64_t> starts{0};
  if (length <= width) return starts;
  const std::int64_t stride = std::max<std::int64_t>(1, width / 2);
  for (std::int64_t s = stride;; s += stride) {
    if (s + width >= length) {  // the last window ends exactly at the text's end
      starts.push_back(length - width);
      break;
    }
    starts.push_back(s);
  }
  return starts;
}

Batch pack_batch(const std::vector<const std::vector<std::int32_t>*>& seqs, const std::vector<std::int32_t>& labels) {
  Batch batch;
  batch.size = static_cast<Index>(seqs.size());
  for (const auto* s : seqs) batch.seq = std::max<Index>(batch.seq, static_cast<Index>(s->size()));
  batch.ids.assign(static_cast<std::size_t>(batch.size * batch.seq), kPadId);
  for (std::size_t b = 0; b < seqs.size(); ++b)
    std::copy(seqs[b]->begin(), seqs[b]->end(), batch.ids.begin() + static_cast<std::ptrdiff_t>(b * batch.seq));
  batch.labels = labels;
  return batch;
}

std::vector<std::vector<std::size_t>> bucketed_batches(const std::vector<std::int64_t>& lengths,
                                                       std::size_t batch_size, const std::uint64_t* seed) {
  std::vector<std::size_t> order(lengths.size());
  std::iota(order.begin(), order.end(), std::size_t(0));
  auto by_length = [&](std::size_t a, std::size_t b) {
    return lengths[a] != lengths[b] ? lengths[a] < lengths[b] : a < b;
  };
  const std::size_t pool = seed ? batch_size * 50 : order.size();
  if (seed) seeded_shuffle(order, *seed);
  for (std::size_t start = 0; start < order.size(); start += pool) {
    auto first = order.begin() + static_cast<std::ptrdiff_t>(start);
    auto last = order.begin() + static_cast<std::ptrdiff_t>(std::min(order.size(), start + pool));
    std::sort(first, last, by_length);
  }
  std::vector<std::vector<std::size_t>> batches;
  for (std::size_t start = 0; start < order.size(); start += batch_size)
    batches.emplace_back(order.begin() + static_cast<std::ptrdiff_t>(start),
                         order.begin() + static_cast<std::ptrdiff_t>(std::min(order.size(), start + batch_size)));
  if (seed) {
    std::vector<std::size_t> perm(batches.size());
    std::iota(perm.begin(), perm.end(), std::size_t(0));
    seeded_shuffle(perm, *seed ^ 0x5851F42D4C957F2DULL);
    std::vector<std::vector<std::size_t>> shuffled;
    shuffled.reserve(batches.size());
    for (std::size_t i : perm) shuffled.push_back(std::move(batches[i]));
    batches = std::move(shuffled);
  }
  return batches;
}

}  // namespace zibert
