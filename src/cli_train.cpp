// zibert train: labelled data in, model file out.
#include <chrono>
#include <cstdio>

#include "cli.hpp"
#include "zibert/io.hpp"
#include "zibert/trainer.hpp"

namespace zibert::cli {
namespace {

struct TrainCli {
  std::string data, dev, out, init;
  TrainOptions train;
  double holdout = 0.1;
  int threads = 0;
  bool quiet = false;
};

int run_train(const TrainCli& o) {
  TrainOptions opt = o.train;
  opt.threads = apply_threads(o.threads);
  // Fail before any work when the result could not be written.
  check_output_path(o.out);
  if (!opt.log_path.empty()) check_output_path(opt.log_path);
  Dataset train = read_dataset(o.data);
  Dataset dev;
  if (!o.dev.empty())
    dev = read_dataset(o.dev);
  else
    split_holdout(train, dev, o.holdout, opt.seed);
  std::optional<Classifier> init;
  if (!o.init.empty()) init = load_model(o.init);
  Progress progress(o.quiet);
  auto started = std::chrono::steady_clock::now();
  Classifier model = train_classifier(train, dev, opt, progress, init ? &*init : nullptr);
  save_model(o.out, model);
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  char line[256];
  std::snprintf(line, sizeof line, "saved %s (best epoch %lld, dev accuracy %.4f) in %s", o.out.c_str(),
                static_cast<long long>(model.training["best_epoch"].get<std::int64_t>()),
                model.training["dev_accuracy"].get<double>(), format_duration(secs).c_str());
  progress.message(line);
  return kExitOk;
}

}  // namespace

Runner setup_train(CLI::App& app) {
  auto o = std::make_shared<TrainCli>();
  ModelConfig& s = o->train.shape;
  app.footer(
      "Train a classifier on labelled text.\n"
      "Data: TSV label<TAB>text[<TAB>category] (optional header naming the columns),\n"
      "fastText '__label__X text', or JSONL {\"text\":…,\"label\":…}; detected by content.\n\n"
      "Example:\n  zibert train --data train.tsv --dev dev.tsv --out my.safetensors --epochs 5");
  app.add_option("--data", o->data, "Training data file")->required()->check(CLI::ExistingFile);
  app.add_option("--dev", o->dev, "Dev data (default: a seeded 10% hold-out of --data)")->check(CLI::ExistingFile);
  app.add_option("--holdout", o->holdout, "Dev fraction held out when --dev is absent")->check(CLI::Range(0.01, 0.5))
      ->capture_default_str();
  app.add_option("--out", o->out, "Model file to write (safetensors)")->required();
  CLI::Option* init = app.add_option("--init", o->init, "Start from this model's weights, vocabulary and labels "
                                     "(its shape too: shape flags are refused)")->check(CLI::ExistingFile);
  app.add_option("--layers", s.layers, "Encoder layers")->check(CLI::Range(1, 64))->capture_default_str();
  app.add_option("--heads", s.heads, "Attention heads")->check(CLI::Range(1, 64))->capture_default_str();
  app.add_option("--dim", s.dim, "Model width C")->check(CLI::Range(2, 4096))->capture_default_str();
  app.add_option("--ffn", s.ffn, "Feed-forward width F")->check(CLI::Range(1, 16384))->capture_default_str();
  app.add_option("--max-len", s.max_len, "Window in tokens, [CLS] and [SEP] included")
      ->check(CLI::Range(3, 8192))->capture_default_str();
  app.add_flag("--tie-qk", s.tie_qk, "Ablation: one projection for queries and keys (DESIGN §0 argues against it)");
  app.add_flag("--no-position{false}", s.position, "Ablation: no position embeddings");
  // The initial model fixes the shape; a shape flag next to --init is a mistake.
  for (const char* shape_flag : {"--layers", "--heads", "--dim", "--ffn", "--max-len", "--tie-qk", "--no-position"})
    init->excludes(app.get_option(shape_flag));
  app.add_option("--dropout", s.dropout, "Dropout probability")->check(CLI::Range(0.0, 0.9))->capture_default_str();
  app.add_option("--epochs", o->train.epochs, "Passes over the data")->check(CLI::Range(1, 100000))
      ->capture_default_str();
  app.add_option("--batch", o->train.batch, "Examples per step")->check(CLI::Range(1, 65536))->capture_default_str();
  app.add_option("--lr", o->train.adam.lr, "Peak learning rate")->check(CLI::Range(0.0, 10.0))->capture_default_str();
  app.add_option("--warmup", o->train.warmup, "Fraction of steps with linear warmup")
      ->check(CLI::Range(0.0, 1.0))->capture_default_str();
  app.add_option("--weight-decay", o->train.adam.weight_decay, "AdamW decoupled weight decay (matrices only)")
      ->check(CLI::Range(0.0, 1.0))->capture_default_str();
  app.add_option("--clip", o->train.adam.clip_norm, "Max gradient norm (0 = no clipping)")
      ->check(CLI::Range(0.0, 1e6))->capture_default_str();
  app.add_option("--seed", o->train.seed, "Random seed (weights, shuffling, dropout, hold-out)")
      ->capture_default_str();
  app.add_option("--min-count", o->train.min_count, "Keep characters seen at least this often")
      ->check(CLI::Range(1, 1000000))->capture_default_str();
  app.add_flag("--lowercase", o->train.lowercase, "Case-fold text (stored in the model)");
  app.add_option("--positive", o->train.positive, "Positive label of a binary model (default: 1/true/yes/pos)");
  add_threads_option(app, o->threads);
  app.add_flag("-q,--quiet", o->quiet, "No progress output");
  app.add_option("--log", o->train.log_path, "Write one JSON line per evaluation (epoch, step, losses, dev "
                                              "accuracy and macro-F1, lr, examples/s); zibert plot draws it");
  return [o] { return run_train(*o); };
}

}  // namespace zibert::cli
