// A classifier: the network with what it needs to read text and name its
// answers (tokenizer, labels, the positive label), and how it was trained.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "zibert/model/bert.hpp"
#include "zibert/text/tokenizer.hpp"

namespace zibert {

struct Classifier {
  ModelConfig config;
  Tokenizer tokenizer;
  std::vector<std::string> labels;  // label id → name
  std::string positive;             // the positive label of a binary model, else ""
  nlohmann::json training;          // how it was trained, dev metrics
  Bert<float> net;

  std::int32_t label_id(const std::string& name) const;  // -1 when unknown
  std::int32_t positive_id() const { return positive.empty() ? -1 : label_id(positive); }
};

}  // namespace zibert
