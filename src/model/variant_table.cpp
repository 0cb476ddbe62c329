#include "zibert/model/variant_table.hpp"

#include <vector>

#include <nlohmann/json.hpp>

#include "zibert/base/error.hpp"
#include "zibert/base/utf8.hpp"
#include "zibert/model/safetensors.hpp"

namespace zibert {

std::string variant_table_to_json(const std::map<char32_t, char32_t>& variants) {
  nlohmann::json table = nlohmann::json::object();
  for (const auto& [from, to] : variants) table[utf8_encode(from)] = utf8_encode(to);
  return table.dump();
}

namespace {

// The events of {"仏": "佛", …}: a pair for each key and string value; the
// first thing that is not one stops the parse with its problem.
struct VariantEvents : nlohmann::json::json_sax_t {
  std::map<char32_t, char32_t> pairs;
  std::string problem;  // empty while the table is good
  std::string written;  // the pair's key as written,
  char32_t from = 0;    // and decoded
  int depth = 0;

  bool fail(const std::string& p) {
    problem = p;
    return false;
  }
  bool not_a_string() {
    return fail(depth == 0 ? "the table is not an object of characters"
                           : "the variant of \"" + written + "\" is not a string");
  }
  bool one(const std::string& s, char32_t& cp) {
    std::vector<char32_t> cps;
    try {
      cps = utf8_decode(s);
    } catch (const Error&) {
      return fail("the table holds invalid UTF-8");
    }
    if (cps.size() != 1) return fail("\"" + s + "\" is not one character");
    cp = cps[0];
    return true;
  }
  bool null() override { return not_a_string(); }
  bool boolean(bool) override { return not_a_string(); }
  bool number_integer(number_integer_t) override { return not_a_string(); }
  bool number_unsigned(number_unsigned_t) override { return not_a_string(); }
  bool number_float(number_float_t, const string_t&) override { return not_a_string(); }
  bool binary(binary_t&) override { return not_a_string(); }
  bool start_array(std::size_t) override { return not_a_string(); }
  bool end_array() override { return false; }  // never reached: start_array stops the parse
  bool start_object(std::size_t) override {
    if (depth > 0) return not_a_string();
    depth = 1;
    return true;
  }
  bool end_object() override { return true; }
  bool key(string_t& k) override {
    written = k;
    return one(k, from);
  }
  bool string(string_t& value) override {
    if (depth == 0) return not_a_string();
    char32_t to = 0;
    if (!one(value, to)) return false;
    pairs.insert_or_assign(from, to);
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::json::exception& e) override {
    return fail("the table is not JSON (" + std::string(e.what()) + ")");
  }
};

}  // namespace

std::map<char32_t, char32_t> variant_table_from_json(std::string_view json) {
  if (json_nesting_depth(json) > kMaxJsonDepth)
    throw Error("the table is JSON nested more than " + std::to_string(kMaxJsonDepth) + " deep");
  VariantEvents events;
  nlohmann::json::sax_parse(json, &events);
  if (!events.problem.empty()) throw Error(events.problem);
  return std::move(events.pairs);
}

}  // namespace zibert
