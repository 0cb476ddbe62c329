// zibert distill as a run: what it reads and writes, recorded in its
// checkpoint; the teachers' labelling, cached next to the output; the
// student's training, calibration and saving.
#include <optional>

#include "zibert/base/world.hpp"
#include "zibert/model/model_file.hpp"
#include "zibert/nn/layers.hpp"
#include "zibert/train/augment.hpp"
#include "zibert/train/distill.hpp"
#include "zibert/train/run.hpp"

namespace zibert {
namespace {

std::string base_name(const std::string& path) { return path.substr(path.find_last_of('/') + 1); }

// The teachers' fingerprints, recorded (or, resumed, checked). The teachers
// themselves are loaded only to label texts the cache lacks.
std::vector<std::string> teacher_prints(RunRecord& record, std::vector<std::string>& paths) {
  record.paths("teacher", paths);
  std::vector<std::string> prints;
  for (const std::string& path : paths) prints.push_back(file_fingerprint(path));
  if (record.resumed()) {
    const nlohmann::json& before = record.get("teacher_fingerprints");
    for (std::size_t i = 0; i < paths.size(); ++i)
      if (i >= before.size() || before[i].get<std::string>() != prints[i])
        throw Error(paths[i] + ": changed since the checkpoint was written; --resume needs the same teachers");
  }
  record.set("teacher_fingerprints", prints);
  for (std::size_t i = 0; i < paths.size(); ++i) check_same_data(paths[i], prints[i]);
  return prints;
}

// The label ids of data's rows in the teachers' labels; one they lack is an
// error naming its row.
std::vector<std::int32_t> gold_ids(const Dataset& data, const std::vector<std::string>& labels) {
  std::vector<std::int32_t> out;
  for (const Example& ex : data.rows) {
    const auto at = std::find(labels.begin(), labels.end(), ex.label);
    if (at == labels.end())
      throw error_at(data.name, ex.line, "label \"" + ex.label + "\" is not among the teachers' labels");
    out.push_back(static_cast<std::int32_t>(at - labels.begin()));
  }
  return out;
}

// The student's tokenizer and max_len, before it exists: a resumed run's,
// --init's, else a fresh one of the shape flags.
Tokenizer student_reader(const Checkpoint* resume, const Model* init, const TrainOptions& opt,
                         std::int64_t& max_len) {
  const Model* base = resume ? &resume->model : init;
  max_len = base ? base->config.max_len : opt.shape.max_len;
  return base ? base->tokenizer : Tokenizer(Vocab(), Normalization{opt.lowercase, false});
}

}  // namespace

RunOutcome distill_run(const DistillRequest& request) {
  DistillRequest r = request;
  TrainOptions opt;
  std::optional<Checkpoint> resume = start_run(r, opt);
  if (!resume && (r.teachers.empty() || r.out.empty() || (r.texts.empty() && r.data.empty())))
    throw Error("distill needs --teacher, --out, and --text or --data (or --resume CHECKPOINT)");
  RunRecord record(resume ? &*resume : nullptr, r.resume);
  if (resume && record.json().value("command", "") != "distill")
    throw Error(r.resume + ": a checkpoint of zibert train or pretrain; continue it with that command's --resume");
  record.set("command", "distill");
  record_labelled_run(record, r.data, r, opt, r.no_calibration);
  record.path("cache", r.cache);
  record.value("temperature", r.temperature);
  record.value("alpha", r.alpha);
  record.value("augment", r.augment);
  record.file("augment_with", "augment_with_fingerprint", r.augment_with, "encoder");
  record.paths("text", r.texts);
  if (resume) r.checkpoint = r.resume;
  if (r.cache.empty()) r.cache = r.out + ".teacher-logits";
  if (opt.extend_vocab && r.init.empty() && !resume)
    throw Error("--extend-vocab extends --init's vocabulary; without --init the vocabulary is built from the texts");
  if (r.data == "-" && World::get().distributed())
    throw Error("--data - under mpirun: only rank 0 would read standard input; give every rank the file");

  std::vector<NamedPath> inputs{{"--data", r.data}, {"--dev", r.dev}, {"--init", r.init}};
  for (const std::string& path : r.teachers) inputs.push_back({"--teacher", path});
  for (const std::string& path : r.texts) inputs.push_back({"--text", path});
  prepare_outputs(r.out, r.checkpoint, opt, inputs);
  if (World::get().leader()) {
    if (r.cache == r.out || r.cache == opt.checkpoint_path || r.cache == opt.log_path)
      throw Error(r.cache + ": the teachers' cache needs a path of its own (not --out's, --log's or the checkpoint's)");
    check_output_path(r.cache);
    check_not_an_input({"--cache", r.cache}, inputs);
  }
  const std::vector<std::string> prints = teacher_prints(record, r.teachers);
  std::optional<Model> init;
  if (!r.init.empty()) init = load_init_model(r.init);
  if (init && init->config.task == Task::classify && init->config.multi_label)
    throw Error(r.init + ": a multi-label classifier; a distilled student has one softmax over the teachers' labels");

  // The texts: --data's (with their gold labels) and --text's, cut to what the student reads.
  Dataset data, dev;
  if (!r.data.empty()) data = read_training_data(record, r.data, false);
  if (!r.dev.empty())
    dev = read_dataset(r.dev, false);
  else if (!r.data.empty())
    split_holdout(data, dev, r.holdout, opt.seed);
  else
    throw Error("distill needs --dev (labelled texts to score the student on) when there is no --data to hold it out of");
  std::vector<std::string> text_prints;
  const nlohmann::json resumed_prints = resume ? record.get("text_fingerprints") : nlohmann::json();
  const std::vector<Corpus> corpora = read_text_files(r.texts, resume ? &resumed_prints : nullptr, text_prints);
  record.set("text_fingerprints", text_prints);
  opt.run = record.json();
  std::int64_t max_len = 0;
  const Tokenizer reader = student_reader(resume ? &*resume : nullptr, init ? &*init : nullptr, opt, max_len);
  DistillSet set;
  for (const std::string& path : r.data.empty() ? r.texts : std::vector<std::string>{r.data})
    set.name += (set.name.empty() ? "" : " + ") + base_name(path);
  for (std::size_t i = r.data.empty() ? 1 : 0; i < r.texts.size(); ++i) set.name += " + " + base_name(r.texts[i]);
  set.temperature = r.temperature;
  set.alpha = r.alpha;
  for (const Example& ex : data.rows) set.texts.push_back(cut_for_student(ex.text, reader, max_len));
  // New texts made from the labelled ones, for the teachers to label (no gold).
  std::size_t augmented = 0;
  if (r.augment > 0) {
    if (data.rows.empty()) throw Error("--augment makes new texts from --data's; give --data");
    std::optional<Model> encoder;
    if (!r.augment_with.empty()) encoder = load_model(r.augment_with);
    const std::vector<std::string> made =
        augment_texts(set.texts, {r.augment, 0.15, 8, opt.seed}, encoder ? &*encoder : nullptr);
    for (const std::string& text : made) set.texts.push_back(cut_for_student(text, reader, max_len));
    augmented = made.size();
  }
  for (const Corpus& corpus : corpora)
    for (const std::string& line : corpus.lines) set.texts.push_back(cut_for_student(line, reader, max_len));

  // The teachers' logits: from the cache when it holds this labelling, else
  // labelled now (the gold labels checked first) and cached.
  Progress progress(r.quiet || !World::get().leader());
  const std::string print = labelling_fingerprint(prints, set.texts);
  std::optional<Teaching> teaching = load_teaching(r.cache, print);
  if (teaching) {
    progress.message("the teachers' logits for " + std::to_string(set.texts.size()) + " texts from " + r.cache);
  } else {
    Model first = load_model(r.teachers.front());
    check_teacher(first, r.teachers.front());
    gold_ids(data, first.classifier.labels);
    progress.message("labelling " + std::to_string(set.texts.size()) + " texts with " +
                     std::to_string(r.teachers.size()) + (r.teachers.size() == 1 ? " teacher" : " teachers"));
    teaching = label_with_teachers(r.teachers, std::move(first), set.texts, !r.quiet && World::get().leader());
    if (World::get().leader()) save_teaching(r.cache, print, *teaching);
  }
  set.labels = teaching->labels;
  set.gold = gold_ids(data, set.labels);
  set.gold.resize(set.texts.size(), kNoGold);  // the augmented and unlabelled texts have none
  // The student's positive label and how its windows combine: the first teacher's, unless given.
  if (opt.positive.empty()) opt.positive = teaching->positive;
  if (opt.windows.empty()) opt.windows = teaching->windows;
  set.soft = soft_targets(teaching->logits, r.temperature);
  if (init && init->config.task == Task::mlm && !r.lr_given && !resume) opt.adam.lr = kFineTuneLr;

  const TrainHooks hooks = stop_hooks(r.faults);
  const auto started = std::chrono::steady_clock::now();
  std::optional<Model> student;
  try {
    student.emplace(distill_classifier(set, dev, opt, progress, init ? &*init : nullptr, resume ? &*resume : nullptr,
                                       hooks));
  } catch (const Interrupted& stop) {
    return {stop, ""};
  }
  nlohmann::json teacher_names = nlohmann::json::array();
  for (const std::string& path : r.teachers) teacher_names.push_back(base_name(path));
  student->training["distillation"] = {{"teachers", teacher_names},
                                       {"teacher_fingerprints", prints},
                                       {"temperature", r.temperature},
                                       {"alpha", r.alpha},
                                       {"texts", set.texts.size()},
                                       {"gold_texts", data.rows.size()}};
  if (augmented > 0) {
    student->training["distillation"]["augmented_texts"] = augmented;
    student->training["distillation"]["augment_with"] = r.augment_with.empty() ? "" : base_name(r.augment_with);
  }
  student->classifier.calibration.reset();
  if (!r.no_calibration) {
    calibrate_on_dev(*student, dev, progress);
  }
  if (World::get().leader())
    save_finished(r.out, *student, opt, "dev accuracy", "dev_accuracy", seconds_since(started), progress);
  return {};
}

}  // namespace zibert
