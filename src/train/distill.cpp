#include "zibert/train/distill.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <optional>
#include <set>

#include "zibert/base/compressed.hpp"
#include "zibert/base/io.hpp"
#include "zibert/base/utf8.hpp"
#include "zibert/base/world.hpp"
#include "zibert/infer/predictor.hpp"
#include "zibert/model/safetensors.hpp"
#include "zibert/nn/layers.hpp"
#include "zibert/train/classifier_data.hpp"

namespace zibert {

void check_teacher(const Model& model, const std::string& path) {
  if (model.config.task != Task::classify)
    throw Error(path + ": an encoder (zibert pretrain's), not a classifier: a teacher must have labels to teach "
                       "(fine-tune it first with zibert train --init)");
  if (model.config.multi_label)
    throw Error(path + ": a multi-label classifier; distill teaches one softmax over the labels, and a multi-label "
                       "teacher's sigmoids are not distilled");
}

std::string cut_for_student(const std::string& text, const Tokenizer& student, std::int64_t max_len) {
  const std::size_t room = static_cast<std::size_t>(std::max<std::int64_t>(max_len - 2, 0));
  if (student.prepare(text).size() <= room) return text;
  const std::vector<char32_t> cps = utf8_decode(text);
  // The longest prefix (in code points) whose normalised form fits.
  std::size_t lo = 0, hi = cps.size();
  while (lo < hi) {
    const std::size_t mid = (lo + hi + 1) / 2;
    const std::string prefix = utf8_encode(std::vector<char32_t>(cps.begin(), cps.begin() + mid));
    if (student.prepare(prefix).size() <= room)
      lo = mid;
    else
      hi = mid - 1;
  }
  return utf8_encode(std::vector<char32_t>(cps.begin(), cps.begin() + lo));
}

namespace {

std::string joined(const std::vector<std::string>& labels) {
  std::string out;
  for (const std::string& l : labels) out += (out.empty() ? "" : ",") + l;
  return out;
}

// Teacher t's logits for texts (in the order of labels) into out, in this process.
void label_one_process(const Model& model, const std::string& path, const std::vector<std::string>& labels,
                       const std::vector<std::string>& texts, bool show_progress, float* out) {
  constexpr std::size_t kChunk = 256;  // texts per call: progress between them
  const std::size_t k = labels.size();
  std::vector<std::size_t> column(k);  // the teacher's label index of each of labels
  for (std::size_t c = 0; c < k; ++c) column[c] = static_cast<std::size_t>(model.classifier.label_id(labels[c]));
  Predictor predictor(model);
  InputProgress progress(show_progress);
  const std::string name = "labelling with " + path.substr(path.find_last_of('/') + 1);
  const auto n = static_cast<std::int64_t>(texts.size());
  for (std::size_t from = 0; from < texts.size(); from += kChunk) {
    const std::size_t to = std::min(texts.size(), from + kChunk);
    std::vector<std::vector<std::int32_t>> ids;
    for (std::size_t i = from; i < to; ++i) ids.push_back(model.tokenizer.encode(texts[i]));
    const std::vector<float> z = predictor.logits(ids);
    for (std::size_t i = from; i < to; ++i)
      for (std::size_t c = 0; c < k; ++c) out[i * k + c] = z[(i - from) * k + column[c]];
    progress.update(name, static_cast<std::int64_t>(to), n);
  }
  progress.finish(name, n, n);
}

// The same over MPI: each rank labels its share of the texts, and every rank
// then holds them all (a text's logits do not depend on the texts beside it).
void label_over_ranks(const Model& model, const std::string& path, const std::vector<std::string>& labels,
                      const std::vector<std::string>& texts, bool show_progress, float* out) {
  const World& world = World::get();
  if (!world.distributed()) return label_one_process(model, path, labels, texts, show_progress, out);
  const std::size_t n = texts.size(), k = labels.size(), size = static_cast<std::size_t>(world.size());
  auto first = [&](std::size_t rank) { return n * rank / size; };
  const std::size_t r = static_cast<std::size_t>(world.rank());
  const std::vector<std::string> mine(texts.begin() + static_cast<std::ptrdiff_t>(first(r)),
                                      texts.begin() + static_cast<std::ptrdiff_t>(first(r + 1)));
  std::vector<float> part(mine.size() * k);
  label_one_process(model, path, labels, mine, show_progress && world.leader(), part.data());
  const std::vector<std::string> parts =
      world.all_strings(std::string(reinterpret_cast<const char*>(part.data()), part.size() * sizeof(float)));
  for (std::size_t q = 0; q < size; ++q) {
    const std::size_t bytes = (first(q + 1) - first(q)) * k * sizeof(float);
    if (parts[q].size() != bytes) throw Error("rank " + std::to_string(q) + " sent teacher logits of the wrong size");
    std::memcpy(out + first(q) * k, parts[q].data(), bytes);
  }
}

}  // namespace

Teaching label_with_teachers(const std::vector<std::string>& paths, Model first, const std::vector<std::string>& texts,
                             bool show_progress) {
  check_teacher(first, paths.front());
  Teaching out{first.classifier.labels, first.classifier.positive, windows_name(first.classifier.window_combine()), {}};
  const std::size_t n = texts.size(), k = out.labels.size();
  out.logits = {static_cast<std::int64_t>(paths.size()), static_cast<std::int64_t>(n), static_cast<std::int64_t>(k),
                std::vector<float>(paths.size() * n * k)};
  const std::set<std::string> want(out.labels.begin(), out.labels.end());
  for (std::size_t t = 0; t < paths.size(); ++t) {
    const Model model = t == 0 ? std::move(first) : load_model(paths[t]);  // one teacher in memory at a time
    check_teacher(model, paths[t]);
    const std::vector<std::string>& labels = model.classifier.labels;
    if (labels.size() != k || std::set<std::string>(labels.begin(), labels.end()) != want)
      throw Error("the teachers disagree on the labels: " + paths.front() + " has " + joined(out.labels) + ", " +
                  paths[t] + " has " + joined(labels));
    label_over_ranks(model, paths[t], out.labels, texts, show_progress, out.logits.values.data() + t * n * k);
  }
  return out;
}

std::string labelling_fingerprint(const std::vector<std::string>& teacher_prints, const std::vector<std::string>& texts) {
  std::string all;
  for (const std::string& p : teacher_prints) all += p + '\n';
  all += '\0';
  for (const std::string& t : texts) all += t + '\n';
  return bytes_fingerprint(all);
}

std::optional<Teaching> load_teaching(const std::string& path, const std::string& fingerprint) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return std::nullopt;
  try {  // a damaged cache is labelled again, not an error
    const std::string bytes = read_file_decompressed(path);
    const SafeTensors st = decode_safetensors(bytes, path);
    const auto print = st.metadata.find("fingerprint");
    const auto logits = st.tensors.find("logits");
    if (print == st.metadata.end() || print->second != fingerprint || logits == st.tensors.end() ||
        logits->second.shape.size() != 3)
      return std::nullopt;
    Teaching out;
    out.labels = nlohmann::json::parse(st.metadata.at("labels")).get<std::vector<std::string>>();
    out.positive = st.metadata.at("positive");
    out.windows = st.metadata.at("windows");
    const std::vector<std::int64_t>& shape = logits->second.shape;
    if (shape[2] != static_cast<std::int64_t>(out.labels.size())) return std::nullopt;
    out.logits = {shape[0], shape[1], shape[2], std::vector<float>(logits->second.count)};
    logits->second.copy_to(out.logits.values.data());
    return out;
  } catch (const std::exception&) {  // Error, or metadata missing or not JSON
    return std::nullopt;
  }
}

void save_teaching(const std::string& path, const std::string& fingerprint, const Teaching& t) {
  save_safetensors(path,
                   {{"fingerprint", fingerprint}, {"format", "zibert teacher logits"},
                    {"labels", nlohmann::json(t.labels).dump()}, {"positive", t.positive}, {"windows", t.windows}},
                   {{"logits", {t.logits.teachers, t.logits.texts, t.logits.labels}, t.logits.values.data()}});
}

std::vector<float> soft_targets(const TeacherLogits& logits, double temperature) {
  const std::size_t n = static_cast<std::size_t>(logits.texts), k = static_cast<std::size_t>(logits.labels);
  std::vector<float> out(n * k, 0.0f);
  std::vector<double> p(k);
  for (std::int64_t t = 0; t < logits.teachers; ++t)
    for (std::size_t i = 0; i < n; ++i) {
      const float* z = logits.row(t, static_cast<std::int64_t>(i));
      const double m = *std::max_element(z, z + k);
      double sum = 0;
      for (std::size_t c = 0; c < k; ++c) sum += p[c] = std::exp((double(z[c]) - m) / temperature);
      for (std::size_t c = 0; c < k; ++c) out[i * k + c] += float(p[c] / sum / double(logits.teachers));
    }
  return out;
}

namespace {

// A classifier's objective whose batches carry the teachers' distribution
// and the gold labels where known (kNoGold elsewhere).
class DistillObjective : public ClassifyObjective {
 public:
  DistillObjective(SequenceSet train, DevSet dev, const DistillSet& set)
      : ClassifyObjective(std::move(train), std::move(dev), 0.0), set_(set) {}

 protected:
  void fill(Batch& batch, const std::vector<std::size_t>& members) const override {
    batch = batch_of(train(), members);
    const std::size_t k = set_.labels.size();
    batch.soft.temperature = set_.temperature;
    batch.soft.alpha = set_.alpha;
    batch.soft.probs.resize(members.size() * k);
    for (std::size_t r = 0; r < members.size(); ++r)
      std::copy_n(&set_.soft[members[r] * k], k, &batch.soft.probs[r * k]);
  }

 private:
  const DistillSet& set_;
};

}  // namespace

Model distill_classifier(const DistillSet& set, const Dataset& dev, const TrainOptions& opt, Progress& progress,
                         Model* init, Checkpoint* resume, const TrainHooks& hooks) {
  if (dev.rows.empty()) throw Error(dev.name + ": no dev examples to evaluate on");
  if (opt.epochs < 1 || opt.batch < 1 || opt.accumulate < 1) throw Error("epochs, batch and accumulate must be at least 1");
  if (set.texts.empty()) throw Error(set.name + ": no texts to distil on");
  const std::size_t k = set.labels.size();
  if (set.gold.size() != set.texts.size() || set.soft.size() != set.texts.size() * k)
    throw Error("distill: texts, gold labels and soft targets differ in number");
  const Model* base = resume ? &resume->model : init;
  const bool from_init = init != nullptr || (resume && resume->state().value("init", false));
  if (base && base->config.task == Task::classify && base->classifier.labels != set.labels)
    throw Error((init ? "--init" : "the checkpoint") + std::string(": a classifier whose labels are not the "
                "teachers' (in their order); start the student from an encoder or a fresh shape"));
  if (base && base->config.multi_label) throw Error("--init: a multi-label classifier cannot be a distilled student");
  Tokenizer reader = base ? base->tokenizer : Tokenizer(Vocab(), Normalization{opt.lowercase, false});
  reader.set_replace_invalid(false);
  std::vector<std::vector<char32_t>> texts;
  texts.reserve(set.texts.size());
  for (const std::string& t : set.texts) texts.push_back(reader.prepare(t));
  Dataset named;
  named.name = set.name;
  std::int64_t added = 0;
  Model model = prepare_model(named, set.labels, texts, opt, base, added);
  SequenceSet tr;
  tr.specials = model.tokenizer.specials();
  for (std::size_t i = 0; i < texts.size(); ++i) tr.add(model.tokenizer.ids(texts[i]), set.gold[i], model.config.max_len);
  DevSet dv = encode_dev(dev, prepare_all(dev, reader), model);
  const std::size_t gold = static_cast<std::size_t>(
      std::count_if(set.gold.begin(), set.gold.end(), [](std::int32_t g) { return g != kNoGold; }));
  const std::size_t dev_examples = dv.ids.size();
  char how[96];
  std::snprintf(how, sizeof how, "temperature %g, alpha %g, %d threads", set.temperature, set.alpha, opt.threads);
  progress.message((resume ? "resuming distillation on " : "distilling on ") + std::to_string(texts.size()) +
                   " texts (" + std::to_string(gold) + " with gold labels), dev " + std::to_string(dev_examples) +
                   ", " + how);
  if (added > 0)
    progress.message("--extend-vocab: " + std::to_string(added) + " characters new to the starting model got rows");
  DistillObjective objective(std::move(tr), std::move(dv), set);
  Loop loop(model, objective, opt, progress, hooks);
  if (init && init->config.task == Task::mlm) loop.set_pretraining(init->training);
  if (resume) loop.restore(*resume);
  release_start(init, resume);
  loop.run(resume != nullptr, from_init);
  model.training = training_record(named, dev, texts.size(), dev_examples, opt, loop, objective, model.config.dropout);
  if (opt.extend_vocab) model.training["vocab_added"] = added;
  if (!loop.state().pretraining.is_null()) model.training["pretraining"] = loop.state().pretraining;
  return model;
}

}  // namespace zibert
