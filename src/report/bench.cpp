#include "zibert/report/bench.hpp"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>

#include "zibert/model/batch.hpp"
#include "zibert/model/model_file.hpp"
#include "zibert/nn/qgemm.hpp"
#include "zibert/text/dataset.hpp"
#include "zibert/base/error.hpp"
#include "zibert/nn/gemm.hpp"
#include "zibert/nn/gemm_bf16.hpp"
#include "zibert/train/optimizer.hpp"
#include "zibert/infer/predictor.hpp"
#include "zibert/train/data_parallel.hpp"
#include "zibert/base/random.hpp"
#include "zibert/text/tokenizer.hpp"
#include "zibert/train/trainer.hpp"
#include "zibert/text/vocab.hpp"

namespace zibert {
namespace {

using Clock = std::chrono::steady_clock;

SequenceSet generate(const BenchOptions& o, ModelConfig& config, std::string& desc) {
  SequenceSet d;
  const std::int64_t hi = o.max_chars > 0 ? o.max_chars : config.max_len - 2;
  if (o.min_chars < 1 || hi < o.min_chars || hi > config.max_len - 2)
    throw Error("--lengths must satisfy 1 <= MIN <= MAX <= max-len − 2 (" + std::to_string(config.max_len - 2) + ")");
  if (config.vocab_size <= kNumSpecial) throw Error("--vocab must be larger than " + std::to_string(kNumSpecial));
  config.labels = 2;
  Rng rng(o.seed);
  for (std::int64_t i = 0; i < o.texts; ++i) {
    std::int64_t len = o.min_chars + static_cast<std::int64_t>(rng.below(static_cast<std::uint64_t>(hi - o.min_chars + 1)));
    std::vector<std::int32_t> ids(static_cast<std::size_t>(len));
    for (auto& id : ids)
      id = static_cast<std::int32_t>(kNumSpecial + rng.below(static_cast<std::uint64_t>(config.vocab_size - kNumSpecial)));
    d.add(ids, static_cast<std::int32_t>(rng.below(2)), config.max_len);
  }
  desc = std::to_string(o.texts) + " generated texts, lengths uniform " + std::to_string(o.min_chars) + "-" +
         std::to_string(hi) + " characters";
  return d;
}

// The labelled file's texts, by a vocabulary of their own characters (the
// bench's network then gets its size), or by a model's tokenizer (bench -m).
SequenceSet from_file(const BenchOptions& o, ModelConfig& config, std::string& desc,
                      const Tokenizer* model_tokenizer = nullptr) {
  Dataset data = read_dataset(o.data);
  if (data.rows.empty()) throw Error(o.data + ": no examples");
  std::vector<std::vector<char32_t>> texts;
  VocabBuilder builder;
  std::map<std::string, std::int32_t> label_ids;
  const Tokenizer reader = model_tokenizer ? *model_tokenizer : Tokenizer(Vocab(), Normalization{});
  for (const Example& ex : data.rows) {
    texts.push_back(reader.prepare(ex.text));
    builder.add(texts.back());
    label_ids.emplace(ex.label, 0);
  }
  std::int32_t next = 0;
  for (auto& [name, id] : label_ids) id = next++;
  const Tokenizer tokenizer = model_tokenizer ? *model_tokenizer : Tokenizer(builder.build(1), Normalization{});
  if (!model_tokenizer) {
    config.vocab_size = tokenizer.vocab().size();
    config.labels = std::max<std::int64_t>(2, static_cast<std::int64_t>(label_ids.size()));
  }
  SequenceSet d;
  d.specials = tokenizer.specials();
  for (std::size_t i = 0; i < texts.size(); ++i)
    d.add(tokenizer.ids(texts[i]), model_tokenizer ? 0 : label_ids[data.rows[i].label], config.max_len);
  desc = o.data + ": " + std::to_string(texts.size()) + " texts" +
         (d.truncated ? " (" + std::to_string(d.truncated) + " cut to max-len)" : "");
  return d;
}

// One training batch, packed ahead so that the timing is the model's alone,
// and what it holds.
struct TrainBatch {
  Batch batch;
  std::int64_t tokens = 0;
  double flops = 0;  // 3 x the forward pass over the real tokens
};

// Training as train runs it: batches in the seeded random order train draws
// them in, cycled until `seconds` have passed (and at least 3 steps), so a
// phase that ends partway through a pass has timed a random sample of its
// batches, not the short or the long ones. Two untimed steps warm up, the
// first on the plan's largest batch: the activation buffers then have the
// size they keep for the rest of a run, as after the first steps of a long
// one, and the timed steps do not pay for their growth (fresh pages).
BenchPhase train_phase(const BenchOptions& o, const ModelConfig& config, Bert<float>& net, const SequenceSet& d) {
  std::uint64_t seed = o.seed;
  std::vector<TrainBatch> plan;
  const auto step_batch = static_cast<std::size_t>(o.batch * o.accumulate);
  for (const std::vector<std::size_t>& members : bucketed_batches(d.lengths, step_batch, &seed)) {
    TrainBatch t{batch_of(d, members, true)};
    for (std::size_t e : members) {
      t.tokens += d.lengths[e];
      t.flops += 3.0 * forward_flops(config, d.lengths[e], LastLayer::cls);
    }
    plan.push_back(std::move(t));
  }
  AdamW<float> adam(AdamWConfig{}, net.layout());
  DataParallel<float> runner(0, static_cast<int>(o.accumulate));
  std::uint64_t step = 0;
  auto run = [&](const Batch& b) {
    DropoutRng rng{o.seed, step++, config.dropout};
    float loss = train_step(net, adam, runner, b, rng, 1e-4);
    if (!std::isfinite(loss)) throw Error("bench: the training loss became non-finite");
  };
  const auto largest = std::max_element(plan.begin(), plan.end(), [](const TrainBatch& a, const TrainBatch& b) {
    return a.batch.size * a.batch.seq < b.batch.size * b.batch.seq;
  });
  run(largest->batch);
  run(plan[1 % plan.size()].batch);
  reset_peak_rss();
  BenchPhase phase;
  std::size_t next = 2 % plan.size();
  const Clock::time_point start = Clock::now();
  while (phase.steps < 3 || seconds_since(start) < o.seconds) {
    const TrainBatch& t = plan[next];
    next = (next + 1) % plan.size();
    run(t.batch);
    ++phase.steps;
    phase.examples += t.batch.size;
    phase.tokens += t.tokens;
    phase.padded_tokens += t.batch.size * t.batch.seq;
    phase.flops += t.flops;
  }
  phase.seconds = seconds_since(start);
  phase.peak_rss_mb = peak_rss_mb();
  return phase;
}

// A classifier around the bench's network, so that predicting goes through
// the Predictor as classify does: a vocabulary of vocab_size − 5 CJK
// characters (the generated ids name no real ones), labels 0 and 1.
Model bench_classifier(const ModelConfig& config, const Bert<float>& net) {
  std::vector<char32_t> chars;
  for (std::int64_t i = kNumSpecial; i < config.vocab_size; ++i) chars.push_back(char32_t(0x4E00 + i));
  std::vector<std::string> labels;
  for (std::int64_t k = 0; k < config.labels; ++k) labels.push_back(std::to_string(k));
  return Model{config, Tokenizer(Vocab(std::move(chars)), Normalization{}), ClassifierPart{labels, "", std::nullopt, std::nullopt}, {}, net, std::nullopt};
}

std::string fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

}  // namespace

double forward_flops(const ModelConfig& c, std::int64_t tokens, LastLayer last_layer, bool tabulated) {
  const double n = double(tokens), dim = double(c.dim), f = double(c.ffn);
  const double qkv = c.tie_qk ? 2 : 3;
  const double per_token = 2 * dim * dim * (qkv + 1) + 4 * dim * f;  // Q/K/V, output, up, down
  const double attention = 4 * n * n * dim;                          // q kᵀ and p v over all heads
  const double layer = n * per_token + attention;
  const double head = 2 * dim * dim + 2 * dim * double(c.labels);    // pooler, classifier
  const bool every_row = last_layer == LastLayer::all_rows || c.tie_qk || c.layers == 0;
  // The first layer's Q/K/V rows come from the tables unless it is a [CLS]-only last layer.
  const double gathered = tabulated && (every_row || c.layers > 1) ? n * 2 * dim * dim * qkv : 0;
  if (every_row) return double(c.layers) * layer + head - gathered;
  // The last layer: [CLS]'s query, output and FFN rows, and either keys and
  // values of every token and [CLS]'s attention row over them, or (folded)
  // the query folded through each head's key rows (C² multiply-adds in all),
  // H score rows and weighted sums of the inputs, and the values of those.
  const double heads = double(c.heads);
  const double attention_cls = last_layer == LastLayer::cls
                                    ? n * 4 * dim * dim + 4 * n * dim
                                    : 2 * dim * dim + 4 * heads * n * dim + 2 * dim * dim;
  const double last = 2 * dim * dim + attention_cls + 2 * dim * dim + 4 * dim * f;
  return double(c.layers - 1) * layer + last + head - gathered;
}

double matmul_ceiling_gflops(std::int64_t n, double seconds, bool use_gemm) {
  MatR<float> a(n, n), b(n, n), c(n, n);
  Rng rng(7);
  for (Index i = 0; i < a.size(); ++i) {
    a.data()[i] = float(rng.uniform() - 0.5);
    b.data()[i] = float(rng.uniform() - 0.5);
  }
  auto product = [&] {
    if (use_gemm)  // float32 whatever the process's precision: the ceiling is float32's
      gemm_f32(a.rows(), b.cols(), a.cols(), {a.data(), a.cols()}, {b.data(), b.cols()}, c.data(), c.cols(), false,
               nullptr, omp_get_max_threads());
    else
      eigen_matmul<float>(a, false, b, false, c, false);
  };
  product();  // warm-up: page faults, thread start
  double best = 0;
  const Clock::time_point start = Clock::now();
  int runs = 0;
  while (runs < 3 || seconds_since(start) < seconds) {
    const Clock::time_point t0 = Clock::now();
    product();
    best = std::max(best, 2.0 * double(n) * double(n) * double(n) / seconds_since(t0) / 1e9);
    ++runs;
  }
  if (!std::isfinite(c(0, 0))) throw Error("the ceiling product gave a non-finite result");
  return best;
}

double peak_rss_mb() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("VmHWM:", 0) == 0) return std::stod(line.substr(6)) / 1024.0;  // kB
  return 0;
}

bool reset_peak_rss() {
  std::ofstream clear("/proc/self/clear_refs");
  clear << "5";
  clear.flush();
  return static_cast<bool>(clear);
}

namespace {

// The machine's side of a result: which products ran, and the ceiling, the
// faster of the two float32 products this build has.
void measure_machine(const BenchOptions& o, BenchResult& r) {
  r.products = matmul_products_name();
  const double ceiling_seconds = std::min(o.seconds, 2.0) / 2;
  r.ceiling_eigen_gflops = matmul_ceiling_gflops(o.ceiling_size, ceiling_seconds, false);
  if (gemm_is_native()) r.ceiling_gemm_gflops = matmul_ceiling_gflops(o.ceiling_size, ceiling_seconds, true);
  r.ceiling_gflops = std::max(r.ceiling_eigen_gflops, r.ceiling_gemm_gflops);
}

double mean_tokens(const SequenceSet& d) {
  std::int64_t total = 0;
  for (std::int64_t len : d.lengths) total += len;
  return double(total) / double(d.lengths.size());
}

// bench -m: a model file's inference (int8 when it is quantized; with
// --int8, a float32 model next to its quantized twin) on generated ids of
// its vocabulary or on --data through its tokenizer.
BenchResult run_model_bench(const BenchOptions& o) {
  if (o.train || o.mlm) throw Error("bench -m measures a model's inference only (give --infer-only)");
  BenchResult r;
  r.options = o;
  const Model model = load_model(o.model);
  if (model.config.task != Task::classify) throw Error(o.model + ": bench -m needs a classifier, not an encoder");
  if (o.int8 && model.quantization)
    throw Error(o.model + ": the model is already int8; --int8 quantizes a float32 one to set next to it");
  r.config = model.config;
  r.parameters = model.net.params().size();
  ModelConfig gen = model.config;  // generate() sets the labels of its own data
  SequenceSet d = o.data.empty() ? generate(o, gen, r.data_desc) : from_file(o, gen, r.data_desc, &model.tokenizer);
  r.data_desc = o.model + (model.quantization ? " (int8)" : "") + "; " + r.data_desc;
  r.mean_tokens = mean_tokens(d);
  if (o.int8)
    bench_int8_phases(o, model, d, r);
  else
    r.infer = bench_infer_phase(o, model, d);
  if (model.quantization) r.int8_isa = int8_isa_name(int8_isa());
  measure_machine(o, r);
  return r;
}

}  // namespace

BenchResult run_bench(const BenchOptions& o) {
  if (o.batch < 1) throw Error("--batch must be at least 1");
  if (o.accumulate < 1) throw Error("--accumulate must be at least 1");
  if (o.seconds <= 0) throw Error("--seconds must be positive");
  if (o.data.empty() && o.texts < 1) throw Error("--texts must be at least 1");
  BenchResult r;
  r.options = o;
  if (!o.model.empty()) return run_model_bench(o);
  r.config = o.shape;
  r.config.validate();
  SequenceSet d = o.data.empty() ? generate(o, r.config, r.data_desc) : from_file(o, r.config, r.data_desc);
  r.config.validate();
  r.mean_tokens = mean_tokens(d);

  if (o.mlm) {
    r.config.task = Task::mlm;
    r.config.labels = 0;
    Bert<float> encoder(r.config);
    encoder.init_weights(o.seed);
    r.parameters = encoder.params().size();
    r.mlm = bench_mlm_phase(o, r.config, encoder, d);
  } else {
    Bert<float> net(r.config, o.train);
    net.init_weights(o.seed);
    r.parameters = net.params().size();
    if (o.train) r.train = train_phase(o, r.config, net, d);
    if (o.infer) {
      const Model model = bench_classifier(r.config, net);
      if (o.int8)
        bench_int8_phases(o, model, d, r);
      else
        r.infer = bench_infer_phase(o, model, d);
    }
  }
  measure_machine(o, r);
  return r;
}

namespace {

nlohmann::ordered_json phase_json(const BenchPhase& p, double ceiling) {
  double gflops = p.seconds > 0 ? p.flops / p.seconds / 1e9 : 0;
  return {{"seconds", p.seconds},
          {"steps", p.steps},
          {"examples", p.examples},
          {"examples_per_s", p.examples_per_s()},
          {"tokens_per_s", p.seconds > 0 ? double(p.tokens) / p.seconds : 0},
          {"padding", p.padded_tokens ? 1.0 - double(p.tokens) / double(p.padded_tokens) : 0},
          {"gflops", gflops},
          {"ceiling_fraction", ceiling > 0 ? gflops / ceiling : 0},
          {"peak_rss_mb", p.peak_rss_mb}};
}

}  // namespace

nlohmann::ordered_json bench_json(const BenchResult& r) {
  const ModelConfig& c = r.config;
  nlohmann::ordered_json j;
  j["model"] = config_to_json(c);  // the model file's form of the shape
  j["model"]["parameters"] = r.parameters;
  j["batch"] = r.options.batch;
  if (r.options.accumulate > 1) j["accumulate"] = r.options.accumulate;
  j["threads"] = r.options.threads;
  j["products"] = r.products;
  j["data"] = r.data_desc;
  j["mean_tokens"] = r.mean_tokens;
  if (r.options.mlm) {
    j["pretrain"] = phase_json(r.mlm, r.ceiling_gflops);
  } else {
    if (r.options.train) j["train"] = phase_json(r.train, r.ceiling_gflops);
    if (r.options.infer) j["inference"] = phase_json(r.infer, r.ceiling_gflops);
    if (r.options.infer && r.options.int8) {
      j["inference_int8"] = phase_json(r.infer_int8, r.ceiling_gflops);
      j["inference_int8"]["isa"] = r.int8_isa;
      j["int8_speedup"] = r.infer.examples_per_s() > 0 ? r.infer_int8.examples_per_s() / r.infer.examples_per_s() : 0;
      j["rounds"] = kInt8Rounds;
    }
  }
  j["ceiling"] = {{"gflops", r.ceiling_gflops},
                  {"product", std::to_string(r.options.ceiling_size) + "x" + std::to_string(r.options.ceiling_size) +
                                  "x" + std::to_string(r.options.ceiling_size) + " float32"},
                  {"gemm_gflops", r.ceiling_gemm_gflops},
                  {"eigen_gflops", r.ceiling_eigen_gflops}};
  return j;
}

std::string bench_table(const BenchResult& r) {
  const ModelConfig& c = r.config;
  const nlohmann::ordered_json j = bench_json(r);
  std::ostringstream out;
  out << "model      " << c.layers << " layers, " << c.heads << " heads, dim " << c.dim << ", ffn " << c.ffn
      << ", max-len " << c.max_len << ", vocab " << c.vocab_size << ", " << r.parameters << " parameters\n";
  out << "run        batch " << r.options.batch
      << (r.options.accumulate > 1 ? " x " + std::to_string(r.options.accumulate) + " rounds" : std::string())
      << ", " << r.options.threads << " threads, " << fixed(r.options.seconds, 1)
      << " s per phase, products in " << r.products << "\n";
  out << "data       " << r.data_desc << "; mean " << fixed(r.mean_tokens, 1) << " tokens with [CLS]/[SEP]\n\n";
  out << "phase       examples/s    tokens/s   GFLOP/s  of ceiling  padding  peak MB\n";
  auto row = [&](const char* name, const nlohmann::ordered_json& p) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "%-10s %11.0f %11.0f %9.1f %10.1f%% %7.1f%% %8.1f\n", name,
                  p["examples_per_s"].get<double>(), p["tokens_per_s"].get<double>(), p["gflops"].get<double>(),
                  100 * p["ceiling_fraction"].get<double>(), 100 * p["padding"].get<double>(),
                  p["peak_rss_mb"].get<double>());
    out << buf;
  };
  if (r.options.mlm) {
    row("pretrain", j["pretrain"]);
  } else {
    if (r.options.train) row("training", j["train"]);
    // bench -m of an int8 file: its one inference row is int8's.
    const bool int8_file = !r.options.int8 && !r.int8_isa.empty();
    if (r.options.infer) row(int8_file ? "int8" : "inference", j["inference"]);
    if (r.options.infer && r.options.int8) row("int8", j["inference_int8"]);
  }
  out << "ceiling    " << fixed(r.ceiling_gflops, 1) << " GFLOP/s: " << j["ceiling"]["product"].get<std::string>()
      << " matrix product, same threads (";
  if (r.ceiling_gemm_gflops > 0) out << "zibert's gemm " << fixed(r.ceiling_gemm_gflops, 1) << ", ";
  out << "Eigen " << fixed(r.ceiling_eigen_gflops, 1) << ")\n";
  out << "GFLOP/s counts the matrix and attention products computed on real tokens (training = 3 x forward;\n"
         "the last layer computes [CLS]'s row only; predicting, it folds its keys and values away, and the\n"
         "first layer's Q/K/V rows come from tables of the embeddings). Inference times whole passes of the\n"
         "Predictor over every text, as classify runs it; training cycles through train's seeded random\n"
         "batch order\n";
  if (r.options.int8)
    out << "int8: the same network quantized (zibert quantize), products on " << r.int8_isa << "; "
        << fixed(j["int8_speedup"].get<double>(), 2) << "x float32 inference. Both are the median of " << kInt8Rounds
        << "\nalternating rounds; GFLOP/s counts int8 multiply-adds as FLOPs, against the float32 ceiling\n";
  if (r.options.mlm)
    out << "pretrain: masked-LM steps as zibert pretrain takes them (texts packed into max-len sequences, 15%\n"
           "of the characters chosen afresh each step); every row of every layer but the last, which computes\n"
           "the chosen rows (keys and values of every row), and the head on the chosen rows\n";
  return out.str();
}

}  // namespace zibert
