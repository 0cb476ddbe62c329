// Knowledge distillation (Hinton et al. 2015): a student classifier learns a
// teacher's (or an ensemble's) soft probabilities on labelled and unlabelled
// texts, plus the gold labels where there are any. The teachers read the
// texts through their own tokenizers (WordPiece or characters); only the
// text and the output distribution pass between them and the student.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "zibert/base/progress.hpp"
#include "zibert/model/model.hpp"
#include "zibert/model/model_file.hpp"
#include "zibert/text/dataset.hpp"
#include "zibert/train/checkpoint.hpp"
#include "zibert/train/trainer_hooks.hpp"

namespace zibert {

// An Error naming path unless model can teach: a single-label classifier.
void check_teacher(const Model& model, const std::string& path);

// text cut to what a student of this tokenizer and max_len reads of it
// (max_len − 2 characters after its normalisation), so that teachers and
// student judge the same text.
std::string cut_for_student(const std::string& text, const Tokenizer& student, std::int64_t max_len);

// Every teacher's raw logits (calibration left out) for every text, in the
// order of labels: (teachers, texts, K) row-major.
struct TeacherLogits {
  std::int64_t teachers = 0, texts = 0, labels = 0;
  std::vector<float> values;
  const float* row(std::int64_t teacher, std::int64_t text) const {
    return values.data() + (teacher * texts + text) * labels;
  }
};

// What the teachers teach: their common labels (in the first teacher's
// order), the first teacher's positive label and window rule, and every
// teacher's logits for every text.
struct Teaching {
  std::vector<std::string> labels;
  std::string positive, windows;
  TeacherLogits logits;
};

// Labels texts with each teacher file in turn, on every thread (over MPI the
// ranks share the texts), progress as it goes. Each teacher is loaded,
// checked (check_teacher, and its labels the first's), used and freed, so
// that one is in memory at a time; first is paths[0]'s model, loaded already.
Teaching label_with_teachers(const std::vector<std::string>& paths, Model first,
                             const std::vector<std::string>& texts, bool show_progress);

// What identifies a labelling: the teachers' bytes (their fingerprints, in
// order; their labels follow from them) and the texts.
std::string labelling_fingerprint(const std::vector<std::string>& teacher_prints, const std::vector<std::string>& texts);

// The teaching cached at path when its fingerprint is this one, else
// nothing (no file, a damaged one, or one of other teachers or texts).
std::optional<Teaching> load_teaching(const std::string& path, const std::string& fingerprint);
// Writes it atomically with its fingerprint.
void save_teaching(const std::string& path, const std::string& fingerprint, const Teaching& teaching);

// The student's targets (texts, K): the mean over teachers of softmax(z / T).
std::vector<float> soft_targets(const TeacherLogits& logits, double temperature);

// What the student trains on: texts (cut already), gold label ids where the
// text has one (kNoGold elsewhere), and the soft targets (texts, K).
struct DistillSet {
  std::string name;                  // for messages and the model's record
  std::vector<std::string> texts;
  std::vector<std::int32_t> gold;
  std::vector<float> soft;
  std::vector<std::string> labels;   // the teachers' order
  double temperature = 2, alpha = 0.5;
};

// Trains the student on set, scored each epoch on dev (gold labels); init
// (optional) gives the starting encoder or classifier, resume a checkpoint's
// run to continue exactly. opt.shape is the student's shape without init.
Model distill_classifier(const DistillSet& set, const Dataset& dev, const TrainOptions& opt, Progress& progress,
                         Model* init = nullptr, Checkpoint* resume = nullptr, const TrainHooks& hooks = {});

}  // namespace zibert
