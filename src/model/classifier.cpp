#include "zibert/model/classifier.hpp"

#include "zibert/base/error.hpp"

namespace zibert {

std::int32_t Classifier::label_id(const std::string& name) const {
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

Windows Classifier::window_combine() const {
  if (windows) return *windows;
  return binary() ? Windows::max : Windows::mean;
}

void Classifier::check_windows() const {
  if (windows == Windows::max && !binary())
    throw Error("windows max needs a binary model with a positive label (train --positive)");
}

}  // namespace zibert
