// What the SVG pictures (explain's heatmaps, plot's curves) share.
#pragma once
#include <string>

namespace zibert {

// Text made safe for an SVG/XML text node or attribute value.
std::string xml_escape(const std::string& s);

}  // namespace zibert
