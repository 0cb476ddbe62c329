// UTF-8: encoding code points, decoding and validating bytes. Every check of
// untrusted text goes through validate_utf8, so one rule decides what is valid.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "zibert/base/error.hpp"

namespace zibert {

// Invalid UTF-8 in the input; byte is the 0-based offset of the bad sequence.
class Utf8Error : public Error {
 public:
  Utf8Error(std::int64_t byte, const std::string& what) : Error(what), byte(byte) {}
  std::int64_t byte;
};

// The text with every sequence checked (overlong forms and surrogates too):
// throws Utf8Error at the first bad one, or with replace maps each bad byte
// to U+FFFD.
std::string validate_utf8(std::string_view text, bool replace);

// Code points of UTF-8 text as it is (no normalisation); throws Utf8Error.
std::vector<char32_t> utf8_decode(std::string_view text);

// Byte offset of the first invalid UTF-8 sequence, or -1 when the text is valid.
std::int64_t invalid_utf8_offset(std::string_view text);

std::string utf8_encode(char32_t cp);
std::string utf8_encode(const std::vector<char32_t>& cps);
// "U+4F5B": a code point as Unicode names it, for messages.
std::string code_point_name(char32_t cp);

}  // namespace zibert
