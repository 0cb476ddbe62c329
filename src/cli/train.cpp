// zibert train: labelled data in, model file out.
#include <chrono>
#include <cstdio>

#include "cli.hpp"
#include "run_control.hpp"
#include "zibert/base/world.hpp"
#include "zibert/base/io.hpp"
#include "zibert/train/calibrate.hpp"
#include "zibert/train/pretrainer.hpp"
#include "zibert/train/trainer.hpp"

namespace zibert::cli {
namespace {

struct TrainCli {
  std::string data, dev, out, init, resume, checkpoint;
  std::string data_fingerprint;  // of --data's bytes (recorded in checkpoints)
  TrainOptions train;
  double holdout = 0.1;
  int threads = 0;
  bool quiet = false, no_calibration = false;
  FaultInjection faults;
  // Self-pretraining first (train --pretrain-epochs): on the training texts and these.
  std::int64_t pretrain_epochs = 0, pretrain_batch = kPretrainBatch;
  double pretrain_lr = 1e-3;
  std::vector<std::string> pretrain_texts;
  std::vector<std::string> outliers;              // --outliers: texts of no label
  std::vector<std::string> outlier_fingerprints;  // a resumed run's, from its checkpoint
  bool lr_given = false;  // --lr on the command line (else fine-tuning an encoder takes kFineTuneLr)
  bool min_count_given = false;
};

// The peak learning rate fine-tuning from an encoder starts with unless --lr
// says otherwise: lower than training from scratch (1e-3), as BERT recipes
// are; README's pretraining study measured it.
constexpr double kFineTuneLr = 3e-4;

// Phase 1 of train --pretrain-epochs: an encoder pretrained on the training
// texts (and --pretrain-text), scored on the dev texts, in memory.
Model self_pretrain(const TrainCli& c, const Dataset& train, const Dataset& dev, const TrainOptions& opt,
                         Progress& progress, const TrainHooks& hooks) {
  std::vector<Corpus> texts{texts_of(train)};
  for (const std::string& path : c.pretrain_texts) texts.push_back(read_corpus(path));
  TrainOptions p = opt;
  p.epochs = c.pretrain_epochs;
  p.batch = c.pretrain_batch;
  p.adam.lr = c.pretrain_lr;
  p.log_path.clear();
  p.checkpoint_path.clear();  // phase 1 is not resumable: a stop in it ends the run
  progress.message("phase 1 of 2: pretraining on the training texts");
  return pretrain_encoder(texts, texts_of(dev), p, progress, nullptr, nullptr, nullptr, hooks);
}

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
    c.data_fingerprint = run.at("data_fingerprint").get<std::string>();  // stdin's is checked once it is read
    c.no_calibration = run.value("no_calibration", false);
    c.outliers = run.value("outliers", std::vector<std::string>{});  // checked when they are read
    c.outlier_fingerprints = run.value("outlier_fingerprints", std::vector<std::string>{});
    check_ranks(run, path);
    if (c.data != "-" && file_fingerprint(c.data) != c.data_fingerprint)
      throw Error(c.data + ": changed since the checkpoint was written; --resume needs the same data");
    if (!c.dev.empty() && file_fingerprint(c.dev) != run.at("dev_fingerprint").get<std::string>())
      throw Error(c.dev + ": changed since the checkpoint was written; --resume needs the same data");
  } catch (const nlohmann::json::exception& e) {
    throw Error(path + ": the checkpoint's training state is damaged (" + std::string(e.what()) + ")");
  }
}

// The run's own record, kept in checkpoints: absolute paths (--resume may
// run from another directory) and the data's fingerprints (the outlier
// files' in outlier_prints).
nlohmann::json run_record(const TrainCli& c, const TrainOptions& opt, const std::vector<std::string>& outlier_prints) {
  const auto absolute = absolute_path;
  nlohmann::json outliers = nlohmann::json::array();
  for (const std::string& path : c.outliers) outliers.push_back(absolute(path));
  return {{"data", c.data == "-" ? c.data : absolute(c.data)},
          {"no_calibration", c.no_calibration},
          {"outliers", outliers},
          {"outlier_fingerprints", outlier_prints},
          {"dev", absolute(c.dev)},
          {"holdout", c.holdout},
          {"out", absolute(c.out)},
          {"log", absolute(opt.log_path)},
          {"data_fingerprint", c.data_fingerprint},
          {"ranks", World::get().size()},
          {"dev_fingerprint", c.dev.empty() ? "" : file_fingerprint(c.dev)}};
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
  if (opt.extend_vocab && c.init.empty() && o.resume.empty())
    throw Error("--extend-vocab extends --init's vocabulary; without --init the vocabulary is built from the data");
  if (o.min_count_given && !c.init.empty() && !opt.extend_vocab)
    throw Error("--min-count: --init's model brings its vocabulary; with --extend-vocab it chooses the characters "
                "that get rows of their own");
  const World& world = World::get();
  if (world.distributed() && c.data == "-")
    throw Error("--data - under mpirun: only rank 0 would read standard input; give every rank the file");
  // Fail before any work when a result could not be written (rank 0 writes everything).
  std::vector<NamedPath> inputs{{"--data", c.data}, {"--dev", c.dev}, {"--init", c.init}};
  for (const std::string& path : c.outliers) inputs.push_back({"--outliers", path});
  for (const std::string& path : c.pretrain_texts) inputs.push_back({"--pretrain-text", path});
  prepare_outputs(c.out, c.checkpoint, opt, inputs);
  std::optional<Model> init;
  if (!c.init.empty()) init = load_init_model(c.init);
  // Multi-label data: as asked (recorded in a checkpoint's shape), or as the starting classifier is.
  if (init && init->config.task == Task::classify) {
    if (opt.shape.multi_label && !init->config.multi_label)
      throw Error("--multi-label: " + c.init + " is a single-label classifier; start from an encoder or a "
                  "multi-label model");
    opt.shape.multi_label = init->config.multi_label;
  }
  const bool multi_label = opt.shape.multi_label;
  Dataset train;
  if (c.data == "-") {  // read once, into memory
    std::string bytes = read_stdin();
    const std::string print = bytes_fingerprint(bytes);
    if (resume && print != c.data_fingerprint)
      throw Error("(standard input): not the data the checkpoint was trained on; --resume needs the same data");
    c.data_fingerprint = print;
    train = parse_dataset(std::move(bytes), "(standard input)", multi_label);
  } else {
    if (!resume) c.data_fingerprint = file_fingerprint(c.data);
    check_same_data(c.data, c.data_fingerprint);
    train = read_dataset(c.data, multi_label);
  }
  Dataset dev;
  if (!c.dev.empty())
    dev = read_dataset(c.dev, multi_label);
  else
    split_holdout(train, dev, c.holdout, opt.seed);
  // Outliers join the training rows only (after the hold-out split: the dev set keeps labels).
  if (!c.outliers.empty() && multi_label)
    throw Error("--outliers trains a softmax towards the uniform distribution; a multi-label model's sigmoids have "
                "no such target (a text of no label is an empty label list in its data)");
  std::vector<std::string> outlier_prints;
  for (const Corpus& corpus : read_text_files(c.outliers, resume ? &c.outlier_fingerprints : nullptr, outlier_prints))
    add_outliers(train, corpus);
  opt.run = run_record(c, opt, outlier_prints);
  const bool from_encoder = c.pretrain_epochs > 0 || (init && init->config.task == Task::mlm);
  if (from_encoder && !o.lr_given) opt.adam.lr = kFineTuneLr;
  Progress progress(o.quiet || !world.leader());  // over MPI, rank 0 reports
  const TrainHooks hooks = stop_hooks(o.faults);
  auto started = std::chrono::steady_clock::now();
  std::optional<Model> trained;
  try {
    if (c.pretrain_epochs > 0) {
      init = self_pretrain(c, train, dev, opt, progress, hooks);
      progress.message("phase 2 of 2: fine-tuning");
    }
    trained.emplace(train_classifier(train, dev, opt, progress, init ? &*init : nullptr, resume ? &*resume : nullptr,
                                     hooks));
  } catch (const Interrupted& stop) {
    if (stop.checkpoint.empty() && c.pretrain_epochs > 0 && !trained)
      std::fprintf(stderr, "zibert: the stop came while pretraining (phase 1), which keeps no checkpoint; run the "
                           "command again to start over\n");
    return report_interrupted(stop, "train");
  }
  trained->classifier.calibration.reset();
  if (multi_label && !c.no_calibration) {
    progress.message("multi-label: no temperature is fitted (it calibrates a softmax); the sigmoids' probabilities "
                     "are the model's");
  } else if (!c.no_calibration) {
    trained->classifier.calibration = calibrate(*trained, dev);
    const Calibration& cal = *trained->classifier.calibration;
    char line[256];
    std::snprintf(line, sizeof line, "calibrated on dev: temperature %.3g; NLL %.4f -> %.4f, ECE %.4f -> %.4f",
                  cal.temperature, cal.before.nll, cal.after.nll, cal.before.ece, cal.after.ece);
    progress.message(line);
  }
  if (!world.leader()) return kExitOk;
  save_finished(c.out, *trained, opt, multi_label ? "dev micro-F1" : "dev accuracy",
                multi_label ? "dev_micro_f1" : "dev_accuracy",
                std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count(), progress);
  return kExitOk;
}

}  // namespace

Runner setup_train(CLI::App& app) {
  auto o = std::make_shared<TrainCli>();
  app.footer(
      "Train a classifier on labelled text.\n"
      "Data: TSV label<TAB>text[<TAB>category] (optional header naming the columns),\n"
      "fastText '__label__X text', or JSONL {\"text\":…,\"label\":…}; detected by content.\n"
      "Multi-label (--multi-label): 'a,b<TAB>text', '__label__a __label__b text', {\"label\":[\"a\",\"b\"],…}.\n\n"
      "Example:\n  zibert train --data train.tsv --dev dev.tsv --out my.safetensors --epochs 5");
  app.add_option("--data", o->data, "Training data file, or - for stdin, read once (required unless --resume)")
      ->check(file_or_stdin());
  CLI::Option* dev =
      app.add_option("--dev", o->dev, "Dev data (default: a seeded 10% hold-out of --data)")->check(CLI::ExistingFile);
  app.add_option("--holdout", o->holdout, "Dev fraction held out when --dev is absent")->check(finite_range(0.01, 0.5))
      ->capture_default_str()
      ->excludes(dev);
  app.add_option("--out", o->out, "Model file to write (safetensors; required unless --resume)");
  CLI::Option* resume = add_checkpoint_options(app, o->checkpoint, o->resume);
  add_fault_injection_options(app, o->faults);
  CLI::Option* init = app.add_option("--init", o->init, "Start from this model's weights, vocabulary and labels "
                                     "(its shape too: shape flags are refused); a file or a shipped model's name (zh-encoder)")
                          ->transform([](std::string name) { return find_model(name); })
                          ->check(CLI::ExistingFile);
  add_shape_options(app, o->train.shape, init);
  add_optimizer_options(app, o->train);
  CLI::Option* pre = app.add_option("--pretrain-epochs", o->pretrain_epochs, "First pretrain an encoder (masked LM, "
                                    "as zibert pretrain) on the training texts for this many epochs, then fine-tune it")
                         ->check(CLI::Range(std::int64_t(0), std::int64_t(100000)))->capture_default_str();
  pre->excludes(init);
  app.add_option("--pretrain-text", o->pretrain_texts, "More raw text for that pretraining, one text per line (repeat)")
      ->check(CLI::ExistingFile)->needs(pre);
  app.add_option("--pretrain-lr", o->pretrain_lr, "Peak learning rate of the pretraining")
      ->check(finite_range(0.0, 10.0))->capture_default_str()->needs(pre);
  app.add_option("--pretrain-batch", o->pretrain_batch, "Sequences per pretraining step")
      ->check(CLI::Range(1, 65536))->capture_default_str()->needs(pre);
  CLI::Option* min_count =
      app.add_option("--min-count", o->train.min_count,
                     "Keep characters seen at least this often (with --init: those --extend-vocab adds)")
          ->check(CLI::Range(1, 1000000))->capture_default_str();
  // --init's model brings its own normalisation.
  app.add_flag("--lowercase", o->train.lowercase, "Case-fold text (stored in the model)")->excludes(init);
  app.add_flag("--extend-vocab", o->train.extend_vocab,
               "With --init: give the data's characters that the starting model lacks rows of their own "
               "(initialised as for training) instead of reading them as [UNK]");
  app.add_flag("--multi-label", o->train.shape.multi_label,
               "Train one sigmoid per label with binary cross-entropy (fastText's -loss ova): a text may carry "
               "several labels (several __label__ words, a JSON list, or comma-separated in TSV) or none ([] in "
               "JSONL); classify prints every label with P >= --threshold");
  app.add_option("--label-smoothing", o->train.label_smoothing,
                 "Label smoothing ε: train towards (1 − ε) on the label and ε/K on every label, not 1 on the label "
                 "(bounds the logits; single-label models)")
      ->check(finite_range(0.0, 0.5))->capture_default_str();
  app.add_option("--outliers", o->outliers,
                 "Texts that belong to none of the labels, one per line (repeat): trained towards the uniform "
                 "distribution over the labels, so that inputs like them get unsure probabilities (outlier "
                 "exposure; single-label models)")
      ->check(CLI::ExistingFile);
  app.add_option("--positive", o->train.positive, "Positive label of a binary model (default: 1/true/yes/pos)");
  app.add_option("--windows", o->train.windows, "How a long text's windows combine, recorded in the model: max of "
                                                "P(positive) (mention detectors), mean (default), first")
      ->check(CLI::IsMember({"max", "mean", "first"}));
  add_threads_option(app, o->threads);
  app.add_flag("-q,--quiet", o->quiet, "No progress output");
  app.add_flag("--no-calibration", o->no_calibration,
               "Keep the network's raw probabilities (default: fit a temperature on the dev set, stored in the model)");
  app.add_option("--log", o->train.log_path, "Write one JSON line per evaluation (epoch, step, losses, dev "
                                              "accuracy and macro-F1, lr, examples/s); zibert plot draws it");
  resume_excludes_others(app, resume);
  CLI::Option* lr = app.get_option("--lr");
  lr->description("Peak learning rate (fine-tuning an encoder, --init ENCODER or --pretrain-epochs: 3e-4 unless given)");
  return [o, lr, min_count] {
    o->lr_given = lr->count() > 0;
    o->min_count_given = min_count->count() > 0;
    return run_train(*o);
  };
}

}  // namespace zibert::cli
