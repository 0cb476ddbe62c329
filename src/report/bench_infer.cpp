// zibert bench's inference phases: the Predictor over every text, timed in
// whole passes, and float32 against int8 in alternating rounds (bench --int8).
#include <algorithm>
#include <chrono>

#include "zibert/infer/predictor.hpp"
#include "zibert/nn/qgemm.hpp"
#include "zibert/report/bench.hpp"

namespace zibert {

namespace {

// The texts as the Predictor takes them (without [CLS] and [SEP]), and what
// one pass over them computes.
struct InferWork {
  std::vector<std::vector<std::int32_t>> texts;
  std::int64_t tokens = 0;
  double flops = 0;
};

InferWork infer_work(const ModelConfig& config, const SequenceSet& d, bool tabulated) {
  InferWork w;
  for (const std::vector<std::int32_t>& s : d.seqs) w.texts.emplace_back(s.begin() + 1, s.end() - 1);
  for (std::int64_t len : d.lengths) {
    w.tokens += len;
    w.flops += forward_flops(config, len, LastLayer::cls_folded, tabulated);
  }
  return w;
}

// A short untimed pass over the first texts: threads, caches, tables.
void warm_up(Predictor& predictor, const InferWork& w) {
  const std::vector<std::vector<std::int32_t>> warm(w.texts.begin(),
                                                    w.texts.begin() + std::min<std::size_t>(w.texts.size(), 64));
  predictor.predict_ids(warm);
}

// Whole passes of the Predictor over every text (at least one, then until
// `seconds` have passed), so a phase never stops partway through the
// length-sorted batches.
BenchPhase infer_round(Predictor& predictor, const InferWork& w, double seconds) {
  BenchPhase phase;
  reset_peak_rss();
  const auto start = std::chrono::steady_clock::now();
  while (phase.steps < 1 || seconds_since(start) < seconds) {
    predictor.predict_ids(w.texts);
    ++phase.steps;
    phase.examples += static_cast<std::int64_t>(w.texts.size());
    phase.tokens += w.tokens;
    phase.padded_tokens += predictor.padded_tokens();
    phase.flops += w.flops;
  }
  phase.seconds = seconds_since(start);
  phase.peak_rss_mb = peak_rss_mb();
  return phase;
}

}  // namespace

BenchPhase bench_infer_phase(const BenchOptions& o, const Model& model, const SequenceSet& d) {
  Predictor predictor(model);
  const InferWork w = infer_work(model.config, d, predictor.tabulated());
  warm_up(predictor, w);
  return infer_round(predictor, w, o.seconds);
}

void bench_int8_phases(const BenchOptions& o, const Model& model, const SequenceSet& d, BenchResult& r) {
  const Model quantized = quantize_model(model);
  Predictor fp32(model), int8(quantized);
  const InferWork w = infer_work(model.config, d, fp32.tabulated());
  warm_up(fp32, w);
  warm_up(int8, w);
  std::vector<BenchPhase> rounds[2];
  for (int round = 0; round < kInt8Rounds; ++round) {
    rounds[0].push_back(infer_round(fp32, w, o.seconds / kInt8Rounds));
    rounds[1].push_back(infer_round(int8, w, o.seconds / kInt8Rounds));
  }
  for (auto& phases : rounds)
    std::sort(phases.begin(), phases.end(),
              [](const BenchPhase& a, const BenchPhase& b) { return a.examples_per_s() < b.examples_per_s(); });
  r.infer = rounds[0][kInt8Rounds / 2];
  r.infer_int8 = rounds[1][kInt8Rounds / 2];
  r.int8_isa = int8_isa_name(int8.int8_isa());
}

}  // namespace zibert
