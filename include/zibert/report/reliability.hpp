// A reliability diagram as a self-contained SVG (zibert plot --reliability):
// per bin of the top probability, the share of right answers against the
// mean confidence, raw and calibrated side by side, with the diagonal a
// calibrated model follows, and how many predictions fall in each bin.
#pragma once
#include <optional>
#include <string>

#include "zibert/model/calibration.hpp"

namespace zibert {

std::string reliability_svg(const CalibrationStats& raw, const std::optional<CalibrationStats>& calibrated,
                            double temperature, const std::string& title);

}  // namespace zibert
