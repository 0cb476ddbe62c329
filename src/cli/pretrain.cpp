// zibert pretrain: raw text in, an encoder (BERT's masked-LM) out.
#include <chrono>
#include <cstdio>
#include <fstream>
#include <set>

#include "cli.hpp"
#include "run_control.hpp"
#include "zibert/base/world.hpp"
#include "zibert/base/io.hpp"
#include "zibert/base/line_source.hpp"
#include "zibert/base/utf8.hpp"
#include "zibert/train/pretrainer.hpp"

namespace zibert::cli {
namespace {

struct PretrainCli {
  std::vector<std::string> texts;
  std::vector<std::string> text_fingerprints;  // a resumed run's, from its checkpoint
  std::string dev, out, init, resume, checkpoint, vocab_from;
  TrainOptions train;
  double holdout = 0.05;
  int threads = 0;
  bool quiet = false;
  FaultInjection faults;
};

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

// prints: the texts' fingerprints, in c.texts' order.
nlohmann::json run_record(const PretrainCli& c, const TrainOptions& opt, const std::vector<std::string>& prints) {
  nlohmann::json texts = nlohmann::json::array();
  for (const std::string& t : c.texts) texts.push_back(absolute_path(t));
  return {{"text", texts},
          {"text_fingerprints", prints},
          {"dev", absolute_path(c.dev)},
          {"dev_fingerprint", c.dev.empty() ? "" : file_fingerprint(c.dev)},
          {"holdout", c.holdout},
          {"ranks", World::get().size()},
          {"out", absolute_path(c.out)},
          {"log", absolute_path(opt.log_path)},
          {"vocab_from", absolute_path(c.vocab_from)},
          {"vocab_from_fingerprint", c.vocab_from.empty() ? "" : file_fingerprint(c.vocab_from)}};
}

// A resumed run takes everything from its checkpoint; the text files must be
// unchanged (run_pretrain checks them against c.text_fingerprints).
void take_from_checkpoint(const Checkpoint& resume, const std::string& path, PretrainCli& c, TrainOptions& opt) {
  try {
    const nlohmann::json& st = resume.state();
    const nlohmann::json& run = st.at("run");
    opt = options_from_json(st.at("options"));
    c.texts = run.at("text").get<std::vector<std::string>>();
    c.text_fingerprints = run.at("text_fingerprints").get<std::vector<std::string>>();
    c.dev = run.at("dev").get<std::string>();
    c.holdout = run.at("holdout").get<double>();
    c.out = run.at("out").get<std::string>();
    opt.log_path = run.at("log").get<std::string>();
    c.checkpoint = path;
    check_ranks(run, path);
    if (!c.dev.empty() && file_fingerprint(c.dev) != run.at("dev_fingerprint").get<std::string>())
      throw Error(c.dev + ": changed since the checkpoint was written; --resume needs the same text");
  } catch (const nlohmann::json::exception& e) {
    throw Error(path + ": the checkpoint's training state is damaged (" + std::string(e.what()) + ")");
  }
}

int run_pretrain(const PretrainCli& o) {
  PretrainCli c = o;
  TrainOptions opt = o.train;
  std::optional<Checkpoint> resume;
  if (!o.resume.empty()) {
    resume = load_checkpoint(o.resume);
    if (resume->model.config.task != Task::mlm)
      throw Error(o.resume + ": a classifier's checkpoint; continue it with zibert train --resume");
    take_from_checkpoint(*resume, o.resume, c, opt);
    opt.threads = apply_threads(opt.threads);
  } else {
    if (c.texts.empty() || c.out.empty()) throw Error("pretrain needs --text and --out (or --resume CHECKPOINT)");
    opt.threads = apply_threads(o.threads);
  }
  // Fail before any work when a result could not be written.
  std::vector<NamedPath> inputs{{"--dev-text", c.dev}, {"--init", c.init}, {"--vocab-from", c.vocab_from}};
  for (const std::string& path : c.texts) inputs.push_back({"--text", path});
  prepare_outputs(c.out, c.checkpoint, opt, inputs);
  const World& world = World::get();
  std::vector<std::string> prints;  // each text read once for its fingerprint (corpora can be large)
  std::vector<Corpus> train = read_text_files(c.texts, resume ? &c.text_fingerprints : nullptr, prints);
  Corpus dev = !c.dev.empty() ? read_corpus(c.dev) : hold_out(train.front(), c.holdout, opt.seed);
  if (dev.lines.empty()) throw Error(train.front().name + ": too few lines to hold out a dev set (give --dev-text)");
  opt.run = run_record(c, opt, prints);
  std::optional<Model> init;
  if (!c.init.empty()) init = load_init_model(c.init);
  std::optional<Vocab> vocab;
  if (!c.vocab_from.empty()) vocab = vocab_from(c.vocab_from);
  Progress progress(o.quiet || !world.leader());  // over MPI, rank 0 reports
  const TrainHooks hooks = stop_hooks(o.faults);
  const auto started = std::chrono::steady_clock::now();
  std::optional<Model> encoder;
  try {
    encoder.emplace(pretrain_encoder(train, dev, opt, progress, init ? &*init : nullptr, vocab ? &*vocab : nullptr,
                                     resume ? &*resume : nullptr, hooks));
  } catch (const Interrupted& stop) {
    return report_interrupted(stop, "pretrain");
  }
  if (!world.leader()) return kExitOk;
  save_finished(c.out, *encoder, opt, "dev masked-token accuracy", "dev_mlm_accuracy",
                std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count(), progress);
  return kExitOk;
}

}  // namespace

Runner setup_pretrain(CLI::App& app) {
  auto o = std::make_shared<PretrainCli>();
  o->train.adam.lr = 1e-3;  // what the shipped encoder and the study pretrain with
  o->train.batch = kPretrainBatch;
  o->train.shape.max_len = 128;
  app.footer(
      "Pretrain an encoder on raw text with BERT's masked-language-model objective:\n"
      "15% of the characters are chosen (80% [MASK], 10% random, 10% kept) and predicted.\n"
      "Text: UTF-8, one text per line; consecutive lines are packed into max-len sequences.\n"
      "Fine-tune the encoder with: zibert train --init ENCODER --data ...\n\n"
      "Example:\n  zibert pretrain --text corpus.txt --out enc.safetensors --epochs 10");
  app.add_option("--text", o->texts, "Raw text file, one text per line (repeat for more; required unless --resume)")
      ->check(CLI::ExistingFile);
  CLI::Option* dev = app.add_option("--dev-text", o->dev, "Held-out text scored each epoch (default: a seeded "
                                                          "hold-out of the first --text)")
                         ->check(CLI::ExistingFile);
  app.add_option("--holdout", o->holdout, "Fraction of the first --text's lines held out when --dev-text is absent")
      ->check(finite_range(0.001, 0.5))->capture_default_str()->excludes(dev);
  app.add_option("--out", o->out, "Encoder file to write (safetensors; required unless --resume)");
  CLI::Option* resume = add_checkpoint_options(app, o->checkpoint, o->resume);
  add_fault_injection_options(app, o->faults);
  CLI::Option* init = app.add_option("--init", o->init, "Continue from this encoder (or a classifier's encoder, with "
                                     "a fresh head): its vocabulary and shape, so shape flags are refused; a file or a shipped "
                                     "model's name")
                          ->transform([](std::string name) { return find_model(name); })
                          ->check(CLI::ExistingFile);
  add_shape_options(app, o->train.shape, init);
  add_optimizer_options(app, o->train);
  CLI::Option* min_count = app.add_option("--min-count", o->train.min_count, "Keep characters seen at least this often")
                               ->check(CLI::Range(1, 1000000))->capture_default_str();
  CLI::Option* vocab_size = app.add_option("--vocab-size", o->train.max_vocab, "At most this many token ids, the "
                                           "specials included: the most frequent characters (0 = all)")
                                ->check(CLI::Range(std::int64_t(0), std::int64_t(10'000'000)))->capture_default_str();
  CLI::Option* from = app.add_option("--vocab-from", o->vocab_from, "Take the vocabulary of this file: one character "
                                     "per line, or a zibert model (so the encoder fits a later task)")
                          ->check(CLI::ExistingFile);
  CLI::Option* lowercase = app.add_flag("--lowercase", o->train.lowercase, "Case-fold text (stored in the model)");
  from->excludes(min_count)->excludes(vocab_size);
  for (CLI::Option* opt : {min_count, vocab_size, from, lowercase}) init->excludes(opt);
  add_threads_option(app, o->threads);
  app.add_flag("-q,--quiet", o->quiet, "No progress output");
  app.add_option("--log", o->train.log_path, "Write one JSON line per epoch (epoch, step, train loss, dev MLM loss "
                                              "and masked-token accuracy, lr, examples/s)");
  resume_excludes_others(app, resume);
  return [o] { return run_pretrain(*o); };
}

}  // namespace zibert::cli
