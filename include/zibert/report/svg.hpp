// What the SVG pictures (explain's heatmaps, plot's curves) share.
#pragma once
#include <string>

namespace zibert {

// Text made safe for an SVG/XML text node or attribute value.
std::string xml_escape(const std::string& s);

// The start of a self-contained SVG picture of width x height pixels: the XML
// declaration, the <svg> element (font_family for its text) and a white
// background. The caller closes it with "</svg>\n".
std::string svg_open(int width, int height, const std::string& font_family = "sans-serif");

}  // namespace zibert
