#include "run_control.hpp"

#include <csignal>
#include <cstdio>
#include <limits>

#include "zibert/base/io.hpp"
#include "zibert/base/world.hpp"
#include "zibert/text/readings.hpp"

namespace zibert::cli {
namespace {

const char* signal_name(int sig) { return sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : "a signal"; }

}  // namespace

void add_fault_injection_options(CLI::App& app, FaultInjection& f) {
  // Hidden from --help (group "").
  app.add_option("--interrupt-at-step", f.interrupt_at_step, "Testing: send a signal to itself after this step")
      ->check(CLI::Range(std::int64_t(-1), std::numeric_limits<std::int64_t>::max()))
      ->group("");
  app.add_option("--interrupt-signal", f.interrupt_signal, "Testing: that signal (2 = SIGINT, 15 = SIGTERM)")
      ->check(CLI::IsMember({2, 15}))
      ->group("");
  app.add_option("--nan-at-step", f.nan_at_step, "Testing: this step's loss is NaN")
      ->check(CLI::Range(std::int64_t(-1), std::numeric_limits<std::int64_t>::max()))
      ->group("");
}

int finish_run(const RunOutcome& outcome, const std::string& command) {
  if (!outcome.stop) return kExitOk;
  const Interrupted& stop = *outcome.stop;
  std::string where = stop.checkpoint.empty() ? ""
                                              : "; checkpoint saved to " + stop.checkpoint + "; continue with: zibert " +
                                                    command + " --resume " + stop.checkpoint;
  if (!outcome.note.empty()) std::fprintf(stderr, "zibert: %s\n", outcome.note.c_str());
  if (World::get().leader())  // over MPI every rank stops at this step; rank 0 says so
    std::fprintf(stderr, "zibert: interrupted by %s after step %lld%s\n", signal_name(stop.signal),
                 static_cast<long long>(stop.step), where.c_str());
  return 128 + stop.signal;
}

void add_classifier_run_options(CLI::App& app, RunRequest& r, bool& no_calibration) {
  app.add_option("--windows", r.train.windows, "How a long text's windows combine, recorded in the model: max of "
                                               "P(positive) (mention detectors), mean (default), first")
      ->check(CLI::IsMember({"max", "mean", "first"}));
  add_threads_option(app, r.threads);
  add_bf16_option(app);
  app.add_flag("-q,--quiet", r.quiet, "No progress output");
  app.add_flag("--no-calibration", no_calibration,
               "Keep the network's raw probabilities (default: fit a temperature on the dev set, stored in the model)");
  app.add_option("--log", r.train.log_path, "Write one JSON line per evaluation (epoch, step, losses, dev "
                                            "accuracy and macro-F1, lr, examples/s); zibert plot draws it");
  app.add_flag("--reading-channel", r.train.reading_channel,
               "Add to each character's embedding the embeddings of the pinyin syllables it is read as "
               "(ChineseBERT's reading channel, kept in the model): characters read alike start out alike, "
               "so a typo of a pinyin keyboard looks like the character it replaces");
  app.add_option("--readings", r.train.readings_table,
                 "The readings table of --reading-channel (default: " + std::string(kDebianUnihanReadings) +
                     ", Debian's unicode-data)")
      ->check(CLI::ExistingFile);
  app.add_option("--sound-only", r.train.sound_only,
                 "With the reading channel: the share of characters, drawn anew each step, whose own embedding is "
                 "left out in training, so that the model learns to hear them by their readings (a homophone it "
                 "was never taught then sounds like the character it replaces)")
      ->check(finite_range(0.0, 0.9))
      ->capture_default_str();
}

void add_shape_options(CLI::App& app, ModelConfig& s, CLI::Option* init) {
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
  app.add_option("--dropout", s.dropout, "Dropout probability")->check(finite_range(0.0, 0.9))->capture_default_str();
}

void add_optimizer_options(CLI::App& app, TrainOptions& t) {
  app.add_option("--epochs", t.epochs, "Passes over the data")->check(CLI::Range(1, 100000))->capture_default_str();
  app.add_option("--batch", t.batch, "Sequences per step")->check(CLI::Range(1, 65536))->capture_default_str();
  app.add_option("--accumulate", t.accumulate, "Gradient accumulation: each step sums N rounds of --batch sequences, "
                                               "as one batch N times larger, holding one round's activations (one "
                                               "process; not under mpirun)")
      ->check(CLI::Range(1, 4096))->capture_default_str();
  app.add_option("--lr", t.adam.lr, "Peak learning rate")->check(finite_range(0.0, 10.0))->capture_default_str();
  app.add_option("--warmup", t.warmup, "Fraction of steps with linear warmup")
      ->check(finite_range(0.0, 1.0))->capture_default_str();
  app.add_option("--weight-decay", t.adam.weight_decay, "AdamW decoupled weight decay (matrices only)")
      ->check(finite_range(0.0, 1.0))->capture_default_str();
  app.add_option("--clip", t.adam.clip_norm, "Max gradient norm (0 = no clipping)")
      ->check(finite_range(0.0, 1e6))->capture_default_str();
  app.add_option("--seed", t.seed, "Random seed (weights, shuffling, dropout, masks, hold-out)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
}

CLI::Option* add_checkpoint_options(CLI::App& app, std::string& checkpoint, std::string& resume) {
  app.add_option("--checkpoint", checkpoint, "Where to keep the training state (default OUT.ckpt): written "
                                             "atomically after each epoch and on SIGINT/SIGTERM, removed at the end");
  return app.add_option("--resume", resume, "Continue an interrupted run from its checkpoint, with its options and "
                                            "data (it refuses other flags)")
      ->check(CLI::ExistingFile);
}

void resume_excludes_others(CLI::App& app, CLI::Option* resume) {
  for (CLI::Option* opt : app.get_options())
    if (opt != resume && !opt->get_lnames().empty() && opt->get_group() != "" &&
        opt->get_lnames() != std::vector<std::string>{"quiet"} && opt->get_lnames() != std::vector<std::string>{"help"})
      resume->excludes(opt);
}

void check_ranks_agree(int argc, char** argv) {
  const World& world = World::get();
  const std::string cmd = argc > 1 ? argv[1] : "";
  if (cmd != "train" && cmd != "pretrain" && cmd != "distill")
    throw Error("only train, pretrain and distill run over MPI ranks; run '" + cmd + "' as one process (or fan it out with "
                "parallel --pipe: docs/howto/scale-out.md)");
  std::string line;
  for (int i = 1; i < argc; ++i) line += std::string(i > 1 ? " " : "") + argv[i];
  auto agree = [&](const std::string& what, const std::string& mine) {
    const std::vector<std::string> all = world.all_strings(mine);
    for (int r = 1; r < world.size(); ++r)
      if (all[static_cast<std::size_t>(r)] != all[0])
        throw Error("rank " + std::to_string(r) + "'s " + what + " differs from rank 0's; every rank must run the "
                    "same zibert with the same flags and data");
  };
  agree("command line", line);
  agree("zibert binary", file_fingerprint("/proc/self/exe"));
}

}  // namespace zibert::cli
