#include "zibert/model/model.hpp"

#include <cmath>

#include "zibert/base/error.hpp"
#include "zibert/base/half.hpp"
#include "zibert/nn/qgemm.hpp"

namespace zibert {

std::int32_t ClassifierPart::label_id(const std::string& name) const {
  for (std::size_t i = 0; i < labels.size(); ++i)
    if (labels[i] == name) return static_cast<std::int32_t>(i);
  return -1;
}

namespace {
constexpr const char* kWindowsNames[] = {"max", "mean", "first"};  // in Windows' order
}  // namespace

const char* windows_name(Windows w) { return kWindowsNames[static_cast<int>(w)]; }

Windows windows_from_name(const std::string& name) {
  for (Windows w : {Windows::max, Windows::mean, Windows::first})
    if (name == windows_name(w)) return w;
  throw Error("windows must be max, mean or first, not \"" + name + "\"");
}

Windows ClassifierPart::window_combine() const {
  if (windows) return *windows;
  return binary() ? Windows::max : Windows::mean;
}

void ClassifierPart::check_windows(bool multi_label) const {
  if (windows == Windows::max && !binary() && !multi_label)
    throw Error("windows max needs a binary model with a positive label (train --positive) or a multi-label one");
}

Model quantize_model(const Model& model) {
  if (model.quantization) throw Error("the model is already quantized (int8)");
  const ModelConfig& c = model.config;
  if (std::max(c.dim, c.ffn) > kInt8MaxDepth)
    throw Error("a model of dim " + std::to_string(c.dim) + " and ffn " + std::to_string(c.ffn) +
                " is too wide for int8 products (at most " + std::to_string(kInt8MaxDepth) + ")");
  Model out = model;
  out.quantization = quantize_net(out.net);
  out.float16 = false;
  return out;
}

Model float16_model(const Model& model) {
  if (model.quantization) throw Error("the model is int8 (zibert quantize's); store the float32 model it came from as float16");
  if (model.float16) throw Error("the model is float16 already");
  Model out = model;
  for (const TensorInfo& t : out.net.layout()) {
    float* w = out.net.params().data() + t.offset;
    for (std::size_t i = 0; i < t.size; ++i) {
      if (!(std::fabs(w[i]) <= kHalfMax))
        throw Error("tensor " + t.name + " holds " + std::to_string(w[i]) + ", beyond float16's ±65504");
      w[i] = float_from_half(half_from_float(w[i]));
    }
  }
  out.float16 = true;
  return out;
}

}  // namespace zibert
