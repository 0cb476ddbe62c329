#include "zibert/infer/window_plan.hpp"

#include <algorithm>

#include "zibert/infer/fast_forward.hpp"

namespace zibert {
namespace {
constexpr std::size_t kBatchWindows = 32;
}  // namespace

WindowPlan plan_windows(const std::vector<std::vector<std::int32_t>>& texts, std::int64_t max_len,
                        const SpecialIds& specials) {
  const std::int64_t width = max_len - 2;
  WindowPlan plan;
  for (std::size_t t = 0; t < texts.size(); ++t) {
    const std::vector<std::int32_t>& ids = texts[t];
    for (std::int64_t start : window_starts(static_cast<std::int64_t>(ids.size()), width)) {
      std::int64_t end = std::min<std::int64_t>(start + width, static_cast<std::int64_t>(ids.size()));
      std::vector<std::int32_t> slice(ids.begin() + start, ids.begin() + end);
      plan.windows.push_back({t, start, with_specials(slice, max_len, specials)});
    }
  }
  std::vector<std::int64_t> lengths;
  lengths.reserve(plan.windows.size());
  for (const Window& w : plan.windows) lengths.push_back(static_cast<std::int64_t>(w.ids.size()));
  for (const std::vector<std::size_t>& bucket : bucketed_batches(lengths, kBatchWindows, nullptr)) {
    std::vector<const std::vector<std::int32_t>*> seqs;
    for (std::size_t w : bucket) seqs.push_back(&plan.windows[w].ids);
    const Batch whole = pack_batch(seqs, {});
    const Index group = std::max<Index>(1, kPredictRows / std::max<Index>(1, whole.seq));
    for (Index b0 = 0; b0 < whole.size; b0 += group) {
      const Index count = std::min(group, whole.size - b0);
      plan.passes.push_back(whole.part(b0, count));
      plan.members.emplace_back(bucket.begin() + b0, bucket.begin() + b0 + count);
      plan.padded_tokens += static_cast<std::int64_t>(count * whole.seq);
    }
  }
  return plan;
}

}  // namespace zibert
