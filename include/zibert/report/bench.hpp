// zibert bench: training and inference throughput of a model shape on
// generated (or given) texts, set against a matrix-product ceiling measured in
// the same run with the same threads.
#pragma once
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "zibert/model/batch.hpp"
#include "zibert/model/bert.hpp"
#include "zibert/model/model.hpp"

namespace zibert {

struct BenchOptions {
  ModelConfig shape;               // layers, heads, dim, ffn, max_len, vocab_size (generated data)
  std::int64_t batch = 32;
  std::int64_t accumulate = 1;     // training rounds per step (train --accumulate): a step is batch × accumulate
  double seconds = 3;              // per phase (training, inference)
  std::int64_t min_chars = 8;      // generated text lengths, uniform in [min_chars, max_chars]
  std::int64_t max_chars = 0;      // 0 = max_len − 2
  std::int64_t texts = 4096;       // generated texts
  std::string data;                // a labelled file to take the texts from instead ("" = generate)
  std::string model;               // a model file to measure instead of the shape (inference only)
  std::uint64_t seed = 1;
  std::int64_t ceiling_size = 2048;  // n of the n×n×n ceiling product
  bool train = true, infer = true;
  bool mlm = false;                // measure masked-LM pretraining instead (zibert pretrain's steps)
  bool int8 = false;               // inference also quantized (zibert quantize), in alternating rounds
  int threads = 1;                 // for the report; the caller sets OpenMP/Eigen
};

// Rounds of float32 and int8 inference that bench --int8 alternates.
inline constexpr int kInt8Rounds = 5;

struct BenchPhase {
  double seconds = 0;
  std::int64_t steps = 0, examples = 0;
  std::int64_t tokens = 0;         // real tokens, [CLS] and [SEP] included
  std::int64_t padded_tokens = 0;  // tokens processed, padding included
  double flops = 0;                // matrix and attention FLOPs over the real tokens
  double peak_rss_mb = 0;          // peak resident memory during the phase
  double examples_per_s() const { return seconds > 0 ? double(examples) / seconds : 0; }
};

struct BenchResult {
  BenchOptions options;
  ModelConfig config;              // with vocab and labels filled in
  std::size_t parameters = 0;
  std::string data_desc;
  double mean_tokens = 0;          // per example, with [CLS]/[SEP]
  BenchPhase train, infer, mlm;
  BenchPhase infer_int8;           // with options.int8: the quantized network's inference
  std::string int8_isa;            // the int8 kernels it ran on
  std::string products;            // the float products: "float32 on avx512", "bfloat16 on amx-bf16", …
  double ceiling_gflops = 0;       // the faster of the two below
  double ceiling_gemm_gflops = 0;  // zibert's gemm (0 when it falls back to Eigen)
  double ceiling_eigen_gflops = 0;
};

// FLOPs (2 per multiply-add) of one forward pass over a sequence of `tokens`
// tokens: the Q/K/V, output and FFN products, qkᵀ and p·v per layer, the
// pooler and the classifier. LayerNorm, softmax and GELU are not counted. A
// training step costs three times the forward pass. `last` says how the last
// layer is counted: every row of every layer (all_rows, as a plain
// implementation computes them, and zibert for tied models or
// ModelCache::all_rows); what zibert's training pass computes (cls: keys
// and values of every token, the rest for [CLS] only); or what its
// inference pass computes (cls_folded: SelfAttention::forward_cls_folded).
// tabulated: the first layer's Q/K/V rows are gathered from EmbeddingTables
// (an inference pass of a tabulated model), not computed, unless that layer
// is a [CLS]-only last layer.
enum class LastLayer { all_rows, cls, cls_folded };
double forward_flops(const ModelConfig& config, std::int64_t tokens, LastLayer last, bool tabulated = false);
// FLOPs of the masked-LM forward pass over a sequence of `tokens` tokens of
// which `chosen` are predicted: every row of every layer but the last, whose
// keys and values come from every row and the rest from the chosen rows only
// (every row when none is chosen or queries and keys are tied), and the head
// (transform and the tied (V, C) decoder) on the chosen rows.
double mlm_forward_flops(const ModelConfig& config, std::int64_t tokens, std::int64_t chosen);

// The best GFLOP/s of an n×n×n single-precision product over `seconds`, with
// the current OpenMP threads: zibert's gemm when use_gemm, else Eigen's.
double matmul_ceiling_gflops(std::int64_t n, double seconds, bool use_gemm);

// Peak resident set of this process in MB (VmHWM), and a reset of it where
// the kernel allows (/proc/self/clear_refs); returns false when it could not.
double peak_rss_mb();
bool reset_peak_rss();

BenchResult run_bench(const BenchOptions& options);
// Inference as classify runs it: the Predictor over every text of d (by the
// model's int8 products when it is quantized), in whole passes (at least one,
// then until options.seconds have passed), after a short untimed one.
BenchPhase bench_infer_phase(const BenchOptions& options, const Model& model, const SequenceSet& d);
// bench --int8: the model and its quantized twin in kInt8Rounds alternating
// rounds (this machine is shared and noisy); result.infer and
// result.infer_int8 get each one's median round, result.int8_isa the path.
void bench_int8_phases(const BenchOptions& options, const Model& model, const SequenceSet& d,
                       BenchResult& result);
// The masked-LM phase of run_bench (bench --mlm) on the texts of d, packed.
BenchPhase bench_mlm_phase(const BenchOptions& options, const ModelConfig& config, Bert<float>& encoder,
                           const SequenceSet& d);

std::string bench_table(const BenchResult& result);
nlohmann::ordered_json bench_json(const BenchResult& result);

}  // namespace zibert
