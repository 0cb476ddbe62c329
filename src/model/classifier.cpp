#include "zibert/model/classifier.hpp"

namespace zibert {

std::int32_t Classifier::label_id(const std::string& name) const {
  for (std::size_t i = 0; i < labels.size(); ++i)
    if (labels[i] == name) return static_cast<std::int32_t>(i);
  return -1;
}

}  // namespace zibert
