#include "run_control.hpp"

#include "zibert/base/io.hpp"
#include "zibert/base/world.hpp"

#include <csignal>
#include <cstdio>
#include <filesystem>
#include <limits>

#include "zibert/base/io.hpp"

namespace zibert::cli {
namespace {

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

TrainHooks stop_hooks(const FaultInjection& f) {
  install_stop_handlers();
  TrainHooks hooks;
  // Over MPI every rank asks every step, so that all stop at the same step
  // (mpirun passes SIGINT and SIGTERM on to each rank, not all at once).
  hooks.stop_signal = [] { return World::get().max(static_cast<int>(g_stop_signal)); };
  hooks.after_step = [&f](std::int64_t step, float& loss) {
    if (f.nan_at_step == step) loss = std::numeric_limits<float>::quiet_NaN();
    if (f.interrupt_at_step == step) std::raise(f.interrupt_signal);
  };
  return hooks;
}

int report_interrupted(const Interrupted& stop, const std::string& command) {
  std::string where = stop.checkpoint.empty() ? ""
                                              : "; checkpoint saved to " + stop.checkpoint + "; continue with: zibert " +
                                                    command + " --resume " + stop.checkpoint;
  if (World::get().leader())  // over MPI every rank stops at this step; rank 0 says so
    std::fprintf(stderr, "zibert: interrupted by %s after step %lld%s\n", signal_name(stop.signal),
                 static_cast<long long>(stop.step), where.c_str());
  return 128 + stop.signal;
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
  if (cmd != "train" && cmd != "pretrain")
    throw Error("only train and pretrain run over MPI ranks; run '" + cmd + "' as one process (or fan it out with "
                "parallel --pipe, see the README's Scale section)");
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

void check_ranks(const nlohmann::json& run, const std::string& path) {
  const int ranks = run.value("ranks", 1), now = World::get().size();
  if (ranks != now)
    throw Error(path + ": the run was checkpointed over " + std::to_string(ranks) + " MPI rank(s); resume it over as "
                "many (now " + std::to_string(now) + "): the split of each batch shapes the arithmetic");
}

void check_same_data(const std::string& what, const std::string& fingerprint) {
  const World& world = World::get();
  const std::vector<std::string> all = world.all_strings(fingerprint);
  for (int r = 1; r < world.size(); ++r)
    if (all[static_cast<std::size_t>(r)] != all[0])
      throw Error("rank " + std::to_string(r) + " read other bytes for " + what + " than rank 0 (fingerprints " +
                  all[static_cast<std::size_t>(r)] + " and " + all[0] + "); every rank must read the same data");
}

std::vector<Corpus> read_text_files(const std::vector<std::string>& paths, const std::vector<std::string>* resumed,
                                    std::vector<std::string>& prints) {
  std::vector<Corpus> out;
  for (std::size_t i = 0; i < paths.size(); ++i) {
    prints.push_back(file_fingerprint(paths[i]));
    if (resumed && (i >= resumed->size() || prints.back() != (*resumed)[i]))
      throw Error(paths[i] + ": changed since the checkpoint was written; --resume needs the same text");
    check_same_data(paths[i], prints.back());
    out.push_back(read_corpus(paths[i]));
  }
  return out;
}

void prepare_outputs(const std::string& out, const std::string& checkpoint, TrainOptions& opt,
                     const std::vector<NamedPath>& inputs) {
  opt.checkpoint_path = checkpoint.empty() ? out + ".ckpt" : checkpoint;
  if (opt.checkpoint_path == out || opt.checkpoint_path == opt.log_path)
    throw Error(opt.checkpoint_path + ": the checkpoint needs a path of its own (not --out's or --log's)");
  if (opt.log_path == out) throw Error(out + ": --log needs a path of its own (not --out's)");
  if (!World::get().leader()) return;  // over MPI, rank 0 alone writes the model, checkpoint and log
  check_output_path(out);
  check_output_path(opt.checkpoint_path);
  if (!opt.log_path.empty()) check_output_path(opt.log_path);
  check_not_an_input({"--out", out}, inputs);
  check_not_an_input({"the checkpoint", opt.checkpoint_path}, inputs);
  check_not_an_input({"--log", opt.log_path}, inputs);
}

void save_finished(const std::string& out, const Model& model, const TrainOptions& opt, const char* metric,
                   const char* metric_field, double seconds, Progress& progress) {
  save_model(out, model);
  std::remove(opt.checkpoint_path.c_str());  // the model is the result; the run's state is done with
  char line[256];
  std::snprintf(line, sizeof line, "saved %s (best epoch %lld, %s %.4f) in %s", out.c_str(),
                static_cast<long long>(model.training["best_epoch"].get<std::int64_t>()), metric,
                model.training[metric_field].get<double>(), format_duration(seconds).c_str());
  progress.message(line);
}

Model load_init_model(const std::string& path) {
  Model model = load_model(path);
  if (model.quantization)
    throw Error(path + ": an int8 model (zibert quantize's) cannot be trained further; start --init from the "
                       "float32 model it was quantized from, and quantize the result again");
  return model;
}

std::string absolute_path(const std::string& path) {
  return path.empty() ? path : std::filesystem::absolute(path).lexically_normal().string();
}

}  // namespace zibert::cli
