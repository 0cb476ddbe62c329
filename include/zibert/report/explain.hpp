// zibert explain: what [CLS] queried and aggregated. The attention weights of
// every layer and head on the window that decided the prediction, and an
// independent view by occlusion: the drop in P(label) when one character
// alone becomes [UNK].
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "zibert/infer/predictor.hpp"

namespace zibert {

struct Explanation {
  std::vector<std::string> tokens;  // [CLS] characters [SEP] of the deciding window
  std::int64_t offset = 0;          // the window's first character in the normalised text
  std::string text;                 // the whole normalised text
  Prediction prediction;            // for the whole text (all windows)
  std::int32_t target = 0;          // the label occlusion measures: positive, else the predicted one
  std::vector<std::vector<MatR<float>>> attention;  // [layer][head]: (T, T), rows are queries
  std::vector<float> occlusion;     // per token: P(target) − P(target with this token as [UNK]); 0 for specials
};

Explanation explain(const Model& model, const std::vector<char32_t>& text);

nlohmann::json explanation_json(const Explanation& e, const Model& model);
// The [CLS] row of every layer, per head and averaged, then occlusion. With
// colour: characters shaded by weight (24-bit ANSI); without: aligned numbers.
std::string explanation_terminal(const Explanation& e, const Model& model, bool colour);
// One heatmap per layer × head (queries × keys), the [CLS] row outlined, a
// colour bar and a title with the text and the prediction.
std::string explanation_svg(const Explanation& e, const Model& model);

// Display width of a UTF-8 token in a terminal (CJK characters are 2 wide).
int display_width(const std::string& token);

}  // namespace zibert
