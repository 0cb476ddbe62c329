// Training curves as a self-contained SVG: losses and dev metrics against steps.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace zibert {

// records: the lines of a train --log file (or a model's training history):
// objects with step, train_loss, dev_loss, dev_accuracy and dev_macro_f1.
std::string training_curves_svg(const std::vector<nlohmann::json>& records, const std::string& title);

// Round tick positions covering [lo, hi], about `count` of them.
std::vector<double> nice_ticks(double lo, double hi, int count);

}  // namespace zibert
