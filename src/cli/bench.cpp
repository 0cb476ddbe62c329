// zibert bench: throughput of a model shape next to this machine's ceiling.
#include <cstdio>

#include "cli.hpp"
#include "zibert/report/bench.hpp"

namespace zibert::cli {
namespace {

struct BenchCli {
  BenchOptions bench;
  std::string lengths, shape;
  int threads = 0;
  bool json = false, train_only = false, infer_only = false;
};

// The shapes of real Chinese BERTs: 768 wide, 12 heads, FFN 3072, their
// 21,128-token vocabulary and token-type embeddings.
void apply_shape(const std::string& name, ModelConfig& s) {
  s.heads = 12;
  s.dim = 768;
  s.ffn = 3072;
  s.vocab_size = 21128;
  s.type_vocab_size = 2;
  s.layers = name == "base" ? 12 : 3;
}

int run_bench_cli(BenchCli o) {
  if (!o.shape.empty()) apply_shape(o.shape, o.bench.shape);
  BenchOptions opt = o.bench;
  opt.threads = apply_threads(o.threads);
  if (!o.lengths.empty()) {
    long long lo = 0, hi = 0;
    char tail = 0;
    if (std::sscanf(o.lengths.c_str(), "%lld-%lld%c", &lo, &hi, &tail) != 2)
      throw Error("--lengths wants MIN-MAX in characters, e.g. 8-126, not \"" + o.lengths + "\"");
    opt.min_chars = lo;
    opt.max_chars = hi;
  }
  if (o.train_only && o.infer_only) throw Error("--train-only and --infer-only exclude each other");
  if (!o.bench.model.empty() && !o.infer_only) throw Error("bench -m measures a model's inference: add --infer-only");
  opt.train = !o.infer_only;
  opt.infer = !o.train_only;
  BenchResult r = run_bench(opt);
  std::string out = o.json ? bench_json(r).dump(2) + "\n" : bench_table(r);
  std::fwrite(out.data(), 1, out.size(), stdout);
  return kExitOk;
}

}  // namespace

Runner setup_bench(CLI::App& app) {
  auto o = std::make_shared<BenchCli>();
  o->bench.shape.vocab_size = 3000;
  app.footer(
      "Train and run a model of the given shape on generated texts (or on --data) for --seconds each, and\n"
      "report examples/s, tokens/s and GFLOP/s next to a large float32 matrix product measured in the same\n"
      "run with the same threads. Nothing is written to disk.\n\n"
      "Examples:\n"
      "  zibert bench\n"
      "  zibert bench --layers 4 --dim 128 --ffn 512 --heads 4 --batch 32 --seconds 5\n"
      "  zibert bench --data train.tsv --threads 1 --json\n"
      "  zibert bench --shape rbt3 --train-only --batch 8 --accumulate 4 --texts 64   # RBT3's shape\n"
      "  zibert bench --mlm --layers 4 --dim 128 --ffn 512   # pretraining throughput (batch 64)\n"
      "  zibert bench --int8 --infer-only --layers 4 --dim 128 --ffn 512   # int8 next to float32\n"
      "  zibert bench -m model.int8.safetensors --infer-only --data test.tsv   # a model file's inference");
  ModelConfig& s = o->bench.shape;
  app.add_option("--layers", s.layers, "Encoder layers L")->check(CLI::Range(1, 64))->capture_default_str();
  app.add_option("--heads", s.heads, "Attention heads H")->check(CLI::Range(1, 64))->capture_default_str();
  app.add_option("--dim", s.dim, "Model width C")->check(CLI::Range(2, 4096))->capture_default_str();
  app.add_option("--ffn", s.ffn, "Feed-forward width F")->check(CLI::Range(1, 16384))->capture_default_str();
  app.add_option("--max-len", s.max_len, "Positions, [CLS]/[SEP] included")->check(CLI::Range(3, 8192))->capture_default_str();
  app.add_option("--vocab", s.vocab_size, "Vocabulary size of generated data")->check(CLI::Range(6, 10000000))->capture_default_str();
  CLI::Option* batch = app.add_option("--batch", o->bench.batch,
                                      "Examples per training batch (inference batches as classify does); with --mlm "
                                      "sequences per step, default 64 as in pretrain")
                           ->check(CLI::Range(1, 65536))
                           ->capture_default_str();
  app.add_option("--seconds", o->bench.seconds, "Seconds per phase")->check(finite_range(0.001, 3600.0))->capture_default_str();
  app.add_option("--lengths", o->lengths, "Generated text lengths MIN-MAX in characters, uniform (default 8 to max-len - 2)");
  app.add_option("--texts", o->bench.texts, "Generated texts")->check(CLI::Range(1, 10000000))->capture_default_str();
  app.add_option("--data", o->bench.data, "Take the texts from this labelled file instead");
  CLI::Option* model = app.add_option("-m,--model", o->bench.model,
                                      "Measure this model file's inference (with --infer-only) instead of a shape");
  app.add_option("--seed", o->bench.seed, "Seed of data, weights and dropout")->check(CLI::NonNegativeNumber)->capture_default_str();
  app.add_option("--ceiling-size", o->bench.ceiling_size, "n of the n x n x n ceiling product")
      ->check(CLI::Range(64, 8192))
      ->capture_default_str();
  CLI::Option* train_only = app.add_flag("--train-only", o->train_only, "Measure training only");
  CLI::Option* infer_only = app.add_flag("--infer-only", o->infer_only, "Measure inference only");
  CLI::Option* mlm = app.add_flag("--mlm", o->bench.mlm, "Measure masked-LM pretraining (zibert pretrain's steps) instead")
      ->excludes(train_only)
      ->excludes(infer_only);
  app.add_flag("--int8", o->bench.int8, "Also measure the network quantized to int8, alternating rounds with float32")
      ->excludes(train_only)
      ->excludes(mlm);
  app.add_option("--accumulate", o->bench.accumulate, "Training rounds per step, as train --accumulate: a step "
                                                     "is --batch times this many sequences")
      ->check(CLI::Range(1, 4096))
      ->capture_default_str();
  CLI::Option* shape = app.add_option("--shape", o->shape, "A real Chinese BERT's shape: rbt3 (3 x 768, 12 heads, "
                                                           "ffn 3072) or base (12 x 768, bert-base-chinese), vocab "
                                                           "21128, token types")
                           ->check(CLI::IsMember({"rbt3", "base"}));
  model->excludes(shape);
  for (const char* shape_flag : {"--layers", "--heads", "--dim", "--ffn", "--max-len", "--vocab"})
    model->excludes(app.get_option(shape_flag));
  for (const char* shape_flag : {"--layers", "--heads", "--dim", "--ffn", "--vocab"})
    shape->excludes(app.get_option(shape_flag));
  add_threads_option(app, o->threads);
  add_bf16_option(app);
  app.add_flag("--json", o->json, "JSON output");
  return [o, batch] {
    if (o->bench.mlm && batch->count() == 0) o->bench.batch = kPretrainBatch;  // pretrain's steps at its default
    return run_bench_cli(*o);
  };
}

}  // namespace zibert::cli
