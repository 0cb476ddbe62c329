// zibert bench --mlm: the masked-LM pretraining phase and its FLOP count.
#include <chrono>
#include <cmath>

#include "zibert/base/error.hpp"
#include "zibert/report/bench.hpp"
#include "zibert/train/data_parallel.hpp"
#include "zibert/train/loop.hpp"
#include "zibert/train/masking.hpp"
#include "zibert/train/packing.hpp"
#include "zibert/train/pretrainer.hpp"

namespace zibert {

// Pretraining as zibert pretrain runs it: the texts packed into max-len
// sequences, batches in the seeded random order, masks drawn afresh each
// step (the drawing is timed too), cycled until `seconds` have passed.
BenchPhase bench_mlm_phase(const BenchOptions& o, const ModelConfig& config, Bert<float>& net, const SequenceSet& d) {
  std::vector<std::vector<std::int32_t>> lines;
  for (const std::vector<std::int32_t>& s : d.seqs) lines.emplace_back(s.begin() + 1, s.end() - 1);
  const SequenceSet packed = packed_sequences(lines, config.max_len, d.specials);
  std::uint64_t seed = o.seed;
  const auto plan = bucketed_batches(packed.lengths, static_cast<std::size_t>(o.batch * o.accumulate), &seed);
  AdamW<float> adam(AdamWConfig{}, net.layout());
  DataParallel<float> runner(0, static_cast<int>(o.accumulate));
  std::uint64_t step = 0;
  BenchPhase phase;
  auto run = [&](const std::vector<std::size_t>& members, bool timed) {
    const MaskedBatch m = mask_tokens(batch_of(packed, members, false), config.vocab_size, packed.specials, o.seed, step,
                                        kMaskRate);
    const DropoutRng rng{o.seed, step++, config.dropout};
    const float loss = apply_step(net, adam, runner.train_mlm(net, m, &rng), 1e-4);
    if (!std::isfinite(loss)) throw Error("bench: the masked-LM loss became non-finite");
    if (!timed) return;
    ++phase.steps;
    phase.examples += m.batch.size;
    phase.padded_tokens += m.batch.size * m.batch.seq;
    std::vector<std::int64_t> chosen(members.size(), 0);
    for (std::int32_t row : m.positions) ++chosen[static_cast<std::size_t>(row / m.batch.seq)];
    for (std::size_t i = 0; i < members.size(); ++i) {
      phase.tokens += packed.lengths[members[i]];
      phase.flops += 3.0 * mlm_forward_flops(config, packed.lengths[members[i]], chosen[i]);
    }
  };
  for (std::size_t i = 0; i < 2; ++i) run(plan[i % plan.size()], false);
  reset_peak_rss();
  std::size_t next = 2 % plan.size();
  const std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
  while (phase.steps < 3 || seconds_since(start) < o.seconds) {
    run(plan[next], true);
    next = (next + 1) % plan.size();
  }
  phase.seconds = seconds_since(start);
  phase.peak_rss_mb = peak_rss_mb();
  return phase;
}

double mlm_forward_flops(const ModelConfig& c, std::int64_t tokens, std::int64_t chosen) {
  ModelConfig encoder = c;
  encoder.labels = 0;
  const double n = double(tokens), dim = double(c.dim), f = double(c.ffn), q = double(chosen);
  const double head = q * (2 * dim * dim + 2 * dim * double(c.vocab_size));  // transform, decoder
  // every row of every layer, without the classifier head forward_flops adds
  const double every_row = forward_flops(encoder, tokens, LastLayer::all_rows) - 2 * dim * dim;
  if (chosen == 0 || c.tie_qk || c.layers == 0) return every_row + head;
  // The last layer (Bert::forward_mlm): keys and values of every row; the
  // query, attention, output and feed-forward rows of the chosen ones.
  const double full_last = n * (8 * dim * dim + 4 * dim * f) + 4 * n * n * dim;
  const double last = n * 4 * dim * dim + q * (2 * dim * dim + 4 * n * dim + 2 * dim * dim + 4 * dim * f);
  return every_row - full_last + last + head;
}

}  // namespace zibert
