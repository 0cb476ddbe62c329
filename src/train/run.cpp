#include "zibert/train/run.hpp"

#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>

#include "zibert/base/line_source.hpp"
#include "zibert/base/threads.hpp"
#include "zibert/base/utf8.hpp"
#include "zibert/base/world.hpp"
#include "zibert/model/model_file.hpp"
#include "zibert/train/calibrate.hpp"
#include "zibert/train/pretrainer.hpp"
#include "zibert/train/trainer.hpp"

namespace zibert {
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

}  // namespace

TrainHooks stop_hooks(const FaultInjection& f) {
  install_stop_handlers();
  TrainHooks hooks;
  // Over MPI every rank asks every step, so that all stop at the same step
  // (mpirun passes SIGINT and SIGTERM on to each rank, not all at once).
  hooks.stop_signal = [] { return World::get().max(static_cast<int>(g_stop_signal)); };
  hooks.after_step = [f](std::int64_t step, float& loss) {
    if (f.nan_at_step == step) loss = std::numeric_limits<float>::quiet_NaN();
    if (f.interrupt_at_step == step) std::raise(f.interrupt_signal);
  };
  return hooks;
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

void check_same_data(const std::string& what, const std::string& fingerprint) {
  const World& world = World::get();
  const std::vector<std::string> all = world.all_strings(fingerprint);
  for (int r = 1; r < world.size(); ++r)
    if (all[static_cast<std::size_t>(r)] != all[0])
      throw Error("rank " + std::to_string(r) + " read other bytes for " + what + " than rank 0 (fingerprints " +
                  all[static_cast<std::size_t>(r)] + " and " + all[0] + "); every rank must read the same data");
}

std::vector<Corpus> read_text_files(const std::vector<std::string>& paths, const nlohmann::json* resumed,
                                    std::vector<std::string>& prints) {
  std::vector<Corpus> out;
  for (std::size_t i = 0; i < paths.size(); ++i) {
    prints.push_back(file_fingerprint(paths[i]));
    if (resumed && (i >= resumed->size() || prints.back() != (*resumed)[i].get<std::string>()))
      throw Error(paths[i] + ": changed since the checkpoint was written; --resume needs the same text");
    check_same_data(paths[i], prints.back());
    out.push_back(read_corpus(paths[i]));
  }
  return out;
}

Model load_init_model(const std::string& path) {
  Model model = load_model(path);
  if (model.quantization)
    throw Error(path + ": an int8 model (zibert quantize's) cannot be trained further; start --init from the "
                       "float32 model it was quantized from, and quantize the result again");
  return model;
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

std::optional<Checkpoint> start_run(const RunRequest& r, TrainOptions& opt) {
  std::optional<Checkpoint> resume;
  if (!r.resume.empty()) {
    resume = load_checkpoint(r.resume);
    try {
      opt = options_from_json(resume->state().at("options"));
    } catch (const nlohmann::json::exception& e) {
      throw Error(r.resume + ": the checkpoint's training state is damaged (" + std::string(e.what()) + ")");
    }
    opt.threads = apply_threads(opt.threads);
  } else {
    opt = r.train;
    opt.threads = apply_threads(r.threads);
  }
  if (opt.accumulate > 1 && World::get().distributed())
    throw Error("--accumulate runs in one process; under mpirun the ranks already share each batch (use more ranks "
                "or a larger --batch)");
  return resume;
}

void record_labelled_run(RunRecord& record, std::string& data, RunRequest& r, TrainOptions& opt,
                         bool& no_calibration) {
  record.file("data", "data_fingerprint", data, "data");
  record.file("dev", "dev_fingerprint", r.dev, "data");
  record.value("holdout", r.holdout);
  record.path("out", r.out);
  record.path("log", opt.log_path);
  record.value("no_calibration", no_calibration);
}

void calibrate_on_dev(Model& model, const Dataset& dev, Progress& progress) {
  model.classifier.calibration = calibrate(model, dev);
  const Calibration& cal = *model.classifier.calibration;
  char line[256];
  std::snprintf(line, sizeof line, "calibrated on dev: temperature %.3g; NLL %.4f -> %.4f, ECE %.4f -> %.4f",
                cal.temperature, cal.before.nll, cal.after.nll, cal.before.ece, cal.after.ece);
  progress.message(line);
}

Dataset read_training_data(RunRecord& record, const std::string& data, bool multi_label) {
  if (data == "-") {
    std::string bytes = read_stdin();
    const std::string print = bytes_fingerprint(bytes);
    if (record.resumed() && print != record.get("data_fingerprint").get<std::string>())
      throw Error("(standard input): not the data the checkpoint was trained on; --resume needs the same data");
    record.set("data_fingerprint", print);
    return parse_dataset(std::move(bytes), "(standard input)", multi_label);
  }
  check_same_data(data, record.get("data_fingerprint").get<std::string>());
  return read_dataset(data, multi_label);
}

namespace {

// An imported Hugging Face model (training["origin"]) is fine-tuned with the
// usual BERT recipe instead: its weights came from far more text, and 3e-4
// would wash them out.
constexpr double kImportedLr = 3e-5, kImportedWarmup = 0.1;
constexpr std::int64_t kImportedEpochs = 3, kImportedBatch = 32;
// Masked-LM pretraining continued from an imported model: the learning rate
// of Hugging Face's run_mlm example, not the 1e-3 of pretraining from scratch.
constexpr double kImportedPretrainLr = 5e-5;

// The model is an imported checkpoint, or was fine-tuned from one.
bool is_imported(const Model& m) {
  const nlohmann::json& t = m.training;
  return t.is_object() && (t.contains("origin") || (t.contains("pretraining") && t["pretraining"].is_object() &&
                                                    t["pretraining"].contains("origin")));
}

// Phase 1 of train --pretrain-epochs: an encoder pretrained on the training
// texts (and --pretrain-text), scored on the dev texts, in memory.
Model self_pretrain(const TrainRequest& r, const Dataset& train, const Dataset& dev, const TrainOptions& opt,
                    Progress& progress, const TrainHooks& hooks) {
  std::vector<Corpus> texts{texts_of(train)};
  for (const std::string& path : r.pretrain_texts) texts.push_back(read_corpus(path));
  TrainOptions p = opt;
  p.epochs = r.pretrain_epochs;
  p.batch = r.pretrain_batch;
  p.adam.lr = r.pretrain_lr;
  p.log_path.clear();
  p.checkpoint_path.clear();  // phase 1 is not resumable: a stop in it ends the run
  progress.message("phase 1 of 2: pretraining on the training texts");
  return pretrain_encoder(texts, texts_of(dev), p, progress, nullptr, nullptr, nullptr, hooks);
}

}  // namespace

RunOutcome train_run(const TrainRequest& request) {
  TrainRequest r = request;
  TrainOptions opt;
  std::optional<Checkpoint> resume = start_run(r, opt);
  if (!resume && (r.data.empty() || r.out.empty()))
    throw Error("train needs --data and --out (or --resume CHECKPOINT)");
  // The run's record: what it reads and writes, recorded or taken back.
  RunRecord record(resume ? &*resume : nullptr, r.resume);
  record_labelled_run(record, r.data, r, opt, r.no_calibration);
  record.paths("outliers", r.outliers);  // their fingerprints once they are read
  if (resume) r.checkpoint = r.resume;
  if (record.json().value("command", "") == "distill")
    throw Error(r.resume + ": a checkpoint of zibert distill; continue it with zibert distill --resume");

  if (opt.extend_vocab && r.init.empty() && !resume)
    throw Error("--extend-vocab extends --init's vocabulary; without --init the vocabulary is built from the data");
  if (r.min_count_given && !r.init.empty() && !opt.extend_vocab)
    throw Error("--min-count: --init's model brings its vocabulary; with --extend-vocab it chooses the characters "
                "that get rows of their own");
  const World& world = World::get();
  if (world.distributed() && r.data == "-")
    throw Error("--data - under mpirun: only rank 0 would read standard input; give every rank the file");
  // Fail before any work when a result could not be written (rank 0 writes everything).
  std::vector<NamedPath> inputs{{"--data", r.data}, {"--dev", r.dev}, {"--init", r.init}};
  for (const std::string& path : r.outliers) inputs.push_back({"--outliers", path});
  for (const std::string& path : r.pretrain_texts) inputs.push_back({"--pretrain-text", path});
  prepare_outputs(r.out, r.checkpoint, opt, inputs);
  std::optional<Model> init;
  if (!r.init.empty()) init = load_init_model(r.init);
  // Multi-label data: as asked (recorded in a checkpoint's shape), or as the starting classifier is.
  if (init && init->config.task == Task::classify) {
    if (opt.shape.multi_label && !init->config.multi_label)
      throw Error("--multi-label: " + r.init + " is a single-label classifier; start from an encoder or a "
                  "multi-label model");
    opt.shape.multi_label = init->config.multi_label;
  }
  const bool multi_label = opt.shape.multi_label;
  Dataset train = read_training_data(record, r.data, multi_label);
  Dataset dev;
  if (!r.dev.empty())
    dev = read_dataset(r.dev, multi_label);
  else
    split_holdout(train, dev, r.holdout, opt.seed);
  // Outliers join the training rows only (after the hold-out split: the dev set keeps labels).
  if (!r.outliers.empty() && multi_label)
    throw Error("--outliers trains a softmax towards the uniform distribution; a multi-label model's sigmoids have "
                "no such target (a text of no label is an empty label list in its data)");
  std::vector<std::string> outlier_prints;
  const nlohmann::json resumed_prints = resume ? record.json().value("outlier_fingerprints", nlohmann::json::array())
                                               : nlohmann::json();
  for (const Corpus& corpus : read_text_files(r.outliers, resume ? &resumed_prints : nullptr, outlier_prints))
    add_outliers(train, corpus);
  record.set("outlier_fingerprints", outlier_prints);
  opt.run = record.json();
  const bool from_encoder = r.pretrain_epochs > 0 || (init && init->config.task == Task::mlm);
  if (from_encoder && !r.lr_given && !resume) opt.adam.lr = kFineTuneLr;
  if (init && is_imported(*init) && !resume) {  // the defaults of BERT fine-tuning, recorded in the run
    nlohmann::json applied = nlohmann::json::object();
    if (!r.lr_given) applied["lr"] = opt.adam.lr = kImportedLr;
    if (!r.epochs_given) applied["epochs"] = opt.epochs = kImportedEpochs;
    if (!r.batch_given) applied["batch"] = opt.batch = kImportedBatch;
    if (!r.warmup_given) applied["warmup"] = opt.warmup = kImportedWarmup;
    record.set("imported_defaults", applied);
    opt.run = record.json();
  }
  Progress progress(r.quiet || !world.leader());  // over MPI, rank 0 reports
  const TrainHooks hooks = stop_hooks(r.faults);
  const auto started = std::chrono::steady_clock::now();
  std::optional<Model> trained;
  try {
    if (r.pretrain_epochs > 0) {
      init = self_pretrain(r, train, dev, opt, progress, hooks);
      progress.message("phase 2 of 2: fine-tuning");
    }
    trained.emplace(train_classifier(train, dev, opt, progress, init ? &*init : nullptr, resume ? &*resume : nullptr,
                                     hooks));
  } catch (const Interrupted& stop) {
    RunOutcome outcome{stop, ""};
    if (stop.checkpoint.empty() && r.pretrain_epochs > 0 && !trained)
      outcome.note = "the stop came while pretraining (phase 1), which keeps no checkpoint; run the command again "
                     "to start over";
    return outcome;
  }
  trained->classifier.calibration.reset();
  if (multi_label && !r.no_calibration) {
    progress.message("multi-label: no temperature is fitted (it calibrates a softmax); the sigmoids' probabilities "
                     "are the model's");
  } else if (!r.no_calibration) {
    calibrate_on_dev(*trained, dev, progress);
  }
  if (world.leader())
    save_finished(r.out, *trained, opt, multi_label ? "dev micro-F1" : "dev accuracy",
                  multi_label ? "dev_micro_f1" : "dev_accuracy", seconds_since(started), progress);
  return {};
}

namespace {

// A safetensors file starts with its header's length (8 bytes) and "{".
bool looks_like_safetensors(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char head[9] = {};
  return in.read(head, 9) && head[8] == '{';
}

// The vocabulary of --vocab-from: a zibert model's, or a file of one
// character per line (blank lines and the special names skipped).
Vocab vocab_from(const std::string& path) {
  if (looks_like_safetensors(path)) return load_model(path).tokenizer.vocab();
  LineSource src = LineSource::open(path);
  std::vector<char32_t> chars;
  std::set<char32_t> seen;
  std::string line;
  for (std::int64_t n = 1; src.next(line); ++n) {
    if (line.empty()) continue;
    bool special = false;
    for (const char* name : kSpecialNames) special = special || line == name;
    if (special) continue;
    std::vector<char32_t> cps;
    try {
      cps = utf8_decode(line);
    } catch (const Utf8Error& e) {
      throw error_at(path, n, e.byte + 1, "invalid UTF-8");
    }
    if (cps.size() != 1) throw error_at(path, n, "expected one character per line, found " + std::to_string(cps.size()));
    if (seen.insert(cps[0]).second) chars.push_back(cps[0]);
  }
  if (chars.empty()) throw Error(path + ": no characters for the vocabulary");
  return Vocab(std::move(chars));
}

}  // namespace

RunOutcome pretrain_run(const PretrainRequest& request) {
  PretrainRequest r = request;
  TrainOptions opt;
  std::optional<Checkpoint> resume = start_run(r, opt);
  if (resume && resume->model.config.task != Task::mlm)
    throw Error(r.resume + ": a classifier's checkpoint; continue it with zibert train --resume");
  if (!resume && (r.texts.empty() || r.out.empty()))
    throw Error("pretrain needs --text and --out (or --resume CHECKPOINT)");
  RunRecord record(resume ? &*resume : nullptr, r.resume);
  record.paths("text", r.texts);  // their fingerprints once they are read
  record.file("dev", "dev_fingerprint", r.dev, "text");
  record.value("holdout", r.holdout);
  record.path("out", r.out);
  record.path("log", opt.log_path);
  // --vocab-from shapes a new run only (a resumed one has the checkpoint's vocabulary): recorded, not checked.
  record.path("vocab_from", r.vocab_from);
  if (!resume) record.set("vocab_from_fingerprint", r.vocab_from.empty() ? "" : file_fingerprint(r.vocab_from));
  if (resume) r.checkpoint = r.resume;
  // Fail before any work when a result could not be written.
  std::vector<NamedPath> inputs{{"--dev-text", r.dev}, {"--init", r.init}, {"--vocab-from", r.vocab_from}};
  for (const std::string& path : r.texts) inputs.push_back({"--text", path});
  prepare_outputs(r.out, r.checkpoint, opt, inputs);
  const World& world = World::get();
  std::vector<std::string> prints;  // each text read once for its fingerprint (corpora can be large)
  const nlohmann::json resumed_prints = resume ? record.get("text_fingerprints") : nlohmann::json();
  std::vector<Corpus> train = read_text_files(r.texts, resume ? &resumed_prints : nullptr, prints);
  record.set("text_fingerprints", prints);
  Corpus dev = !r.dev.empty() ? read_corpus(r.dev) : hold_out(train.front(), r.holdout, opt.seed);
  if (dev.lines.empty()) throw Error(train.front().name + ": too few lines to hold out a dev set (give --dev-text)");
  opt.run = record.json();
  std::optional<Model> init;
  if (!r.init.empty()) init = load_init_model(r.init);
  if (init && is_imported(*init) && !resume && !r.lr_given) {
    opt.adam.lr = kImportedPretrainLr;
    record.set("imported_defaults", nlohmann::json{{"lr", kImportedPretrainLr}});
    opt.run = record.json();
  }
  std::optional<Vocab> vocab;
  if (!r.vocab_from.empty() && !resume) vocab = vocab_from(r.vocab_from);
  Progress progress(r.quiet || !world.leader());  // over MPI, rank 0 reports
  const TrainHooks hooks = stop_hooks(r.faults);
  const auto started = std::chrono::steady_clock::now();
  std::optional<Model> encoder;
  try {
    encoder.emplace(pretrain_encoder(train, dev, opt, progress, init ? &*init : nullptr, vocab ? &*vocab : nullptr,
                                     resume ? &*resume : nullptr, hooks));
  } catch (const Interrupted& stop) {
    return {stop, ""};
  }
  if (world.leader())
    save_finished(r.out, *encoder, opt, "dev masked-token accuracy", "dev_mlm_accuracy", seconds_since(started),
                  progress);
  return {};
}

}  // namespace zibert
