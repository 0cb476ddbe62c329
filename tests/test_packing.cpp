// Raw text lines packed into masked-LM sequences.
#include <catch2/catch.hpp>

#include "zibert/text/vocab.hpp"
#include "zibert/train/packing.hpp"

using namespace zibert;

namespace {
std::vector<std::int32_t> line(std::int32_t first, std::size_t n) {
  std::vector<std::int32_t> out;
  for (std::size_t i = 0; i < n; ++i) out.push_back(first + static_cast<std::int32_t>(i));
  return out;
}
}  // namespace

TEST_CASE("lines are packed whole into sequences of at most max_len", "[packing]") {
  // max_len 10: room for 8 characters and their separators.
  const auto packed = pack_lines({line(10, 3), {}, line(20, 4), line(30, 2), line(40, 20), line(70, 1)}, 10, SpecialIds{});
  const std::vector<std::vector<std::int32_t>> expected = {
      {kCls, 10, 11, 12, kSep, 20, 21, 22, 23, kSep},  // 3 + 4 fill it exactly (the empty line skipped)
      {kCls, 30, 31, kSep},                            // the long line that follows closes it
      {kCls, 40, 41, 42, 43, 44, 45, 46, 47, kSep},    // 20 characters: pieces of 8 and 8, and
      {kCls, 48, 49, 50, 51, 52, 53, 54, 55, kSep},
      {kCls, 56, 57, 58, 59, kSep, 70, kSep},          // the last 4, which the next line joins
  };
  CHECK(packed == expected);
  for (const auto& s : packed) CHECK(s.size() <= 10);
  CHECK(pack_lines({}, 10, SpecialIds{}).empty());
  CHECK(pack_lines({{}, {}}, 10, SpecialIds{}).empty());
  CHECK_THROWS(pack_lines({line(1, 1)}, 2, SpecialIds{}));
}

TEST_CASE("packing keeps every character once and in order", "[packing]") {
  std::vector<std::vector<std::int32_t>> lines;
  std::vector<std::int32_t> all;
  for (std::int32_t i = 0; i < 200; ++i) {
    lines.push_back(line(5 + i, static_cast<std::size_t>((i * 7) % 23)));
    all.insert(all.end(), lines.back().begin(), lines.back().end());
  }
  const auto packed = pack_lines(lines, 16, SpecialIds{});
  std::vector<std::int32_t> back;
  std::size_t tokens = 0;
  for (const auto& s : packed) {
    REQUIRE(s.size() <= 16);
    CHECK(s.front() == kCls);
    CHECK(s.back() == kSep);
    for (std::int32_t id : s)
      if (id != kCls && id != kSep) back.push_back(id);
    tokens += s.size();
  }
  CHECK(back == all);
  // Little padding: most sequences are nearly full.
  CHECK(double(tokens) / double(16 * packed.size()) > 0.75);
}
