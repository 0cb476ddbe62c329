// Inference on texts of any length: each text is cut into overlapping windows
// of the model's width, and the windows' predictions combine as the model
// says (ClassifierPart::window_combine: max of P(positive), mean, or the first).
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "zibert/infer/fast_forward.hpp"
#include "zibert/infer/model_products.hpp"
#include "zibert/infer/window_plan.hpp"
#include "zibert/model/model.hpp"

namespace zibert {

struct Prediction {
  std::int32_t label = 0;
  float prob = 0;               // probability of the predicted label
  std::vector<float> probs;     // one per label
  std::vector<std::int32_t> labels;  // a multi-label model's answer: every label with P >= the threshold, else label alone
  std::int64_t offset = 0;      // character offset of the deciding window
};

// The model's weights must not change while a Predictor uses it.
class Predictor {
 public:
  // threshold: P(positive) needed for the positive label of a binary model;
  // P(label) needed for each label of a multi-label model.
  // tables: gather the first layer's projections from EmbeddingTables,
  // filled as tokens first appear (unless the model's would exceed
  // kMaxTableBytes); false multiplies them out. The two agree up to
  // rounding; either way a text's prediction does not depend on the others.
  // The products are the model's ModelProducts: int8 twins for a quantized
  // model, bfloat16 ones under --bf16, else float32 twins packed once
  // (Weights::packed) or the weights in place (Weights::in_place, what
  // training's dev scoring uses).
  using Weights = ModelProducts::Weights;
  explicit Predictor(const Model& model, double threshold = 0.5, bool tables = true,
                     Weights weights = Weights::packed);
  // texts are normalised characters (see normalize()).
  std::vector<Prediction> predict(const std::vector<std::vector<char32_t>>& texts);
  // The same for texts already mapped to ids (Tokenizer::encode), without [CLS]/[SEP].
  std::vector<Prediction> predict_ids(const std::vector<std::vector<std::int32_t>>& texts);
  // A single-label model's logits (n, K), calibration left out: the
  // network's own for a text that fits one window; for a longer one, the log
  // of its windows' probabilities combined as the model says (the same
  // softmax at every temperature).
  std::vector<float> logits(const std::vector<std::vector<std::int32_t>>& texts);
  bool binary() const { return model_.classifier.binary(); }
  // A calibrated model's probabilities are tempered (model.classifier.calibration),
  // each text's after its windows combine, unless this is set: then they are
  // the network's own. Tempering keeps the most probable label.
  void set_raw_probs(bool raw) { raw_ = raw; }
  bool calibrated() const { return model_.classifier.calibration && !raw_; }
  // The label of a text's (combined) probabilities, K of them: a binary
  // model's positive when P(positive) >= the threshold, else the most probable.
  std::int32_t decide(const float* probs) const;
  // A multi-label model's labels: every one with P >= the threshold, in label
  // order, or the most probable alone when none is.
  std::vector<std::int32_t> decide_labels(const float* probs) const;
  bool multi_label() const { return model_.config.multi_label; }
  bool tabulated() const { return tables_ != nullptr; }
  bool int8() const { return products_.int8() != nullptr; }
  Int8Isa int8_isa() const { return products_.int8() ? products_.int8()->isa() : Int8Isa::scalar; }
  // Token rows the last predict computed, padding included.
  std::int64_t padded_tokens() const { return padded_tokens_; }

 private:
  // Runs every window of texts: their probabilities (windows, K), and their
  // logits when asked.
  WindowPlan run_windows(const std::vector<std::vector<std::int32_t>>& texts, std::vector<float>& probs,
                         std::vector<float>* logits);
  // temper: apply the calibration temperature when the model has one.
  std::vector<Prediction> combine(const std::vector<Window>& windows, const std::vector<float>& window_probs,
                                  std::size_t n_texts, bool temper) const;

  const Model& model_;
  double threshold_;
  std::int32_t positive_;
  bool raw_ = false;
  std::unique_ptr<EmbeddingTables<float>> tables_;
  ModelProducts products_;
  std::vector<InferenceCache<float>> caches_;  // one per thread
  std::int64_t padded_tokens_ = 0;
};

}  // namespace zibert
