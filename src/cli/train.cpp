// zibert train: labelled data in, model file out.
#include <chrono>
#include <csignal>
#include <filesystem>
#include <cstdio>
#include <limits>

#include "cli.hpp"
#include "zibert/base/io.hpp"
#include "zibert/train/trainer.hpp"

namespace zibert::cli {
namespace {

struct TrainCli {
  std::string data, dev, out, init, resume, checkpoint;
  TrainOptions train;
  double holdout = 0.1;
  int threads = 0;
  bool quiet = false;
  // Fault injection for the tests (hidden flags): after this step, raise
  // interrupt_signal; make this step's loss NaN.
  std::int64_t interrupt_at_step = -1, nan_at_step = -1;
  int interrupt_signal = 2;  // SIGINT
};

// SIGINT/SIGTERM ask training to stop after the current step and save a
// checkpoint; a second one ends the process at once (the atomic writes still
// leave every file whole).
volatile std::sig_atomic_t g_stop_signal = 0;

extern "C" void on_stop_signal(int sig) {
  if (g_stop_signal != 0) {
    std::signal(sig, SIG_DFL);
    std::raise(sig);
    return;
  }
  g_stop_signal = sig;
}

void install_stop_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

const char* signal_name(int sig) { return sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : "a signal"; }

// A resumed run takes everything from its checkpoint: options, data and
// output paths, with the data files checked against their fingerprints.
void take_from_checkpoint(const Checkpoint& resume, const std::string& path, TrainCli& c, TrainOptions& opt) {
  const nlohmann::json& st = resume.state();
  try {
    const nlohmann::json& run = st.at("run");
    opt = options_from_json(st.at("options"));
    c.data = run.at("data").get<std::string>();
    c.dev = run.at("dev").get<std::string>();
    c.holdout = run.at("holdout").get<double>();
    c.out = run.at("out").get<std::string>();
    opt.log_path = run.at("log").get<std::string>();
    c.checkpoint = path;
    if (file_fingerprint(c.data) != run.at("data_fingerprint").get<std::string>())
      throw Error(c.data + ": changed since the checkpoint was written; --resume needs the same data");
    if (!c.dev.empty() && file_fingerprint(c.dev) != run.at("dev_fingerprint").get<std::string>())
      throw Error(c.dev + ": changed since the checkpoint was written; --resume needs the same data");
  } catch (const nlohmann::json::exception& e) {
    throw Error(path + ": the checkpoint's training state is damaged (" + std::string(e.what()) + ")");
  }
}

// The run's own record, kept in checkpoints: absolute paths (--resume may
// run from another directory) and the data's fingerprints.
nlohmann::json run_record(const TrainCli& c, const TrainOptions& opt) {
  auto absolute = [](const std::string& path) {
    return path.empty() ? path : std::filesystem::absolute(path).lexically_normal().string();
  };
  return {{"data", absolute(c.data)},
          {"dev", absolute(c.dev)},
          {"holdout", c.holdout},
          {"out", absolute(c.out)},
          {"log", absolute(opt.log_path)},
          {"data_fingerprint", file_fingerprint(c.data)},
          {"dev_fingerprint", c.dev.empty() ? "" : file_fingerprint(c.dev)}};
}

TrainHooks stop_hooks(const TrainCli& o) {
  install_stop_handlers();
  TrainHooks hooks;
  hooks.stop_signal = [] { return static_cast<int>(g_stop_signal); };
  // The hidden fault-injection flags (tests): a signal or a NaN at a step.
  hooks.after_step = [&o](std::int64_t step, float& loss) {
    if (o.nan_at_step == step) loss = std::numeric_limits<float>::quiet_NaN();
    if (o.interrupt_at_step == step) std::raise(o.interrupt_signal);
  };
  return hooks;
}

int run_train(const TrainCli& o) {
  TrainCli c = o;
  TrainOptions opt = o.train;
  std::optional<Checkpoint> resume;
  if (!o.resume.empty()) {
    resume = load_checkpoint(o.resume);
    take_from_checkpoint(*resume, o.resume, c, opt);
    opt.threads = apply_threads(opt.threads);  // the split over threads shapes the arithmetic
  } else {
    if (c.data.empty() || c.out.empty()) throw Error("train needs --data and --out (or --resume CHECKPOINT)");
    opt.threads = apply_threads(o.threads);
  }
  opt.checkpoint_path = c.checkpoint.empty() ? c.out + ".ckpt" : c.checkpoint;
  if (opt.checkpoint_path == c.out || opt.checkpoint_path == opt.log_path)
    throw Error(opt.checkpoint_path + ": the checkpoint needs a path of its own (not --out's or --log's)");
  // Fail before any work when a result could not be written.
  check_output_path(c.out);
  check_output_path(opt.checkpoint_path);
  if (!opt.log_path.empty()) check_output_path(opt.log_path);
  Dataset train = read_dataset(c.data);
  Dataset dev;
  if (!c.dev.empty())
    dev = read_dataset(c.dev);
  else
    split_holdout(train, dev, c.holdout, opt.seed);
  opt.run = run_record(c, opt);
  std::optional<Classifier> init;
  if (!c.init.empty()) init = load_model(c.init);
  Progress progress(o.quiet);
  const TrainHooks hooks = stop_hooks(o);
  auto started = std::chrono::steady_clock::now();
  std::optional<Classifier> trained;
  try {
    trained.emplace(train_classifier(train, dev, opt, progress, init ? &*init : nullptr, resume ? &*resume : nullptr,
                                     hooks));
  } catch (const Interrupted& stop) {
    std::string where = stop.checkpoint.empty()
                            ? ""
                            : "; checkpoint saved to " + stop.checkpoint + "; continue with: zibert train --resume " +
                                  stop.checkpoint;
    std::fprintf(stderr, "zibert: interrupted by %s after step %lld%s\n", signal_name(stop.signal),
                 static_cast<long long>(stop.step), where.c_str());
    return 128 + stop.signal;
  }
  save_model(c.out, *trained);
  std::remove(opt.checkpoint_path.c_str());  // the model is the result; the run's state is done with
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  char line[256];
  std::snprintf(line, sizeof line, "saved %s (best epoch %lld, dev accuracy %.4f) in %s", c.out.c_str(),
                static_cast<long long>(trained->training["best_epoch"].get<std::int64_t>()),
                trained->training["dev_accuracy"].get<double>(), format_duration(secs).c_str());
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
  app.add_option("--data", o->data, "Training data file (required unless --resume)")->check(CLI::ExistingFile);
  app.add_option("--dev", o->dev, "Dev data (default: a seeded 10% hold-out of --data)")->check(CLI::ExistingFile);
  app.add_option("--holdout", o->holdout, "Dev fraction held out when --dev is absent")->check(CLI::Range(0.01, 0.5))
      ->capture_default_str();
  app.add_option("--out", o->out, "Model file to write (safetensors; required unless --resume)");
  app.add_option("--checkpoint", o->checkpoint, "Where to keep the training state (default OUT.ckpt): written "
                                                "atomically after each epoch and on SIGINT/SIGTERM, removed at the end");
  CLI::Option* resume = app.add_option("--resume", o->resume, "Continue an interrupted run from its checkpoint, with "
                                        "its options and data (it refuses other training flags)")
                            ->check(CLI::ExistingFile);
  // Fault injection for the tests, hidden from --help.
  app.add_option("--interrupt-at-step", o->interrupt_at_step, "Testing: send a signal to itself after this step")
      ->check(CLI::Range(std::int64_t(-1), std::numeric_limits<std::int64_t>::max()))
      ->group("");
  app.add_option("--interrupt-signal", o->interrupt_signal, "Testing: that signal (2 = SIGINT, 15 = SIGTERM)")
      ->check(CLI::IsMember({2, 15}))
      ->group("");
  app.add_option("--nan-at-step", o->nan_at_step, "Testing: this step's loss is NaN")
      ->check(CLI::Range(std::int64_t(-1), std::numeric_limits<std::int64_t>::max()))->group("");
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
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--min-count", o->train.min_count, "Keep characters seen at least this often")
      ->check(CLI::Range(1, 1000000))->capture_default_str();
  app.add_flag("--lowercase", o->train.lowercase, "Case-fold text (stored in the model)");
  app.add_option("--positive", o->train.positive, "Positive label of a binary model (default: 1/true/yes/pos)");
  app.add_option("--windows", o->train.windows, "How a long text's windows combine, recorded in the model: max of "
                                                "P(positive) (mention detectors), mean (default), first")
      ->check(CLI::IsMember({"max", "mean", "first"}));
  add_threads_option(app, o->threads);
  app.add_flag("-q,--quiet", o->quiet, "No progress output");
  app.add_option("--log", o->train.log_path, "Write one JSON line per evaluation (epoch, step, losses, dev "
                                              "accuracy and macro-F1, lr, examples/s); zibert plot draws it");
  // A resumed run takes everything from its checkpoint.
  for (CLI::Option* opt : app.get_options())
    if (opt != resume && !opt->get_lnames().empty() && opt->get_group() != "" &&
        opt->get_lnames() != std::vector<std::string>{"quiet"} && opt->get_lnames() != std::vector<std::string>{"help"})
      resume->excludes(opt);
  return [o] { return run_train(*o); };
}

}  // namespace zibert::cli
