// A model and its classifier head.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "zibert/model/bert.hpp"
#include "zibert/model/calibration.hpp"
#include "zibert/model/quantization.hpp"
#include "zibert/text/tokenizer.hpp"

namespace zibert {

// How the predictions of a long text's windows combine into the text's:
// max of P(positive) (a binary model: a mention anywhere counts; a
// multi-label model's each label's max), mean of
// the probabilities (sentiment, topic), or the first window alone.
enum class Windows { max, mean, first };
const char* windows_name(Windows w);
Windows windows_from_name(const std::string& name);  // throws Error naming the choices

// What a classifier's outputs mean and how its answers are read: its labels,
// the positive one, how a long text's windows combine, and its temperature.
// Empty for an encoder (task mlm), which has no labels.
struct ClassifierPart {
  std::vector<std::string> labels;  // label id → name
  std::string positive;             // the positive label of a binary model, else ""
  // Recorded by train --windows; a model without it combines by max when it
  // is binary() and by mean otherwise.
  std::optional<Windows> windows;
  // train's temperature, fitted on the dev set; inference applies it unless
  // asked for the raw probabilities. A model without it predicts raw.
  std::optional<Calibration> calibration;

  Windows window_combine() const;
  // Throws unless the recorded windows suit the labels (max needs binary() or multi-label).
  void check_windows(bool multi_label) const;
  std::int32_t label_id(const std::string& name) const;  // -1 when unknown
  std::int32_t positive_id() const { return positive.empty() ? -1 : label_id(positive); }
  // Two labels, one of them positive: a detector, whose windows may combine by max.
  bool binary() const { return positive_id() >= 0 && labels.size() == 2; }
};

// A model: the network with what it needs to read text (config, tokenizer),
// how it is stored (int8, float16), how it was made (training), and, for a
// classifier, what its outputs mean. load_model and pretrain_encoder return
// one; encoders and classifiers are both Models, told apart by config.task.
struct Model {
  ModelConfig config;
  Tokenizer tokenizer;
  ClassifierPart classifier;  // labels, positive, windows, calibration (empty for an encoder)
  nlohmann::json training;    // how it was trained, dev metrics
  Bert<float> net;
  // zibert quantize's int8 matrices; net then holds their dequantized values.
  std::optional<Quantization> quantization;
  // Stored with float16 weights (zibert quantize --to float16): net holds
  // their exact float32 values, which is what every pass computes with, and
  // saving writes float16 again. Training always makes a float32 model.
  bool float16 = false;
};

// The model with its matrices quantized to int8 (zibert quantize): the same
// metadata, model.quantization set and the network's matrices dequantized.
// Throws when it already is, or when a product would be too deep for int32
// sums (kInt8MaxDepth). A float16 model's int8 twin keeps its other tensors
// float32, as every int8 model does.
Model quantize_model(const Model& model);

// The model stored with float16 weights (zibert quantize --to float16): the
// same metadata, model.float16 set and every weight rounded to the nearest
// half. Throws when it is int8 or float16 already, or when a weight lies
// beyond float16's ±65504, naming the tensor.
Model float16_model(const Model& model);

}  // namespace zibert
