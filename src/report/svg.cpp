#include "zibert/report/svg.hpp"

namespace zibert {

std::string xml_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '&') out += "&amp;";
    else if (c == '<') out += "&lt;";
    else if (c == '>') out += "&gt;";
    else if (c == '"') out += "&quot;";
    else out += c;
  }
  return out;
}

std::string svg_open(int width, int height, const std::string& font_family) {
  const std::string w = std::to_string(width), h = std::to_string(height);
  return "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + w +
         "\" height=\"" + h + "\" viewBox=\"0 0 " + w + " " + h + "\" font-family=\"" + font_family +
         "\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
}

}  // namespace zibert
