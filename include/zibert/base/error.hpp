// Errors the library throws. Only main() prints them and picks the exit code.
#pragma once
#include <cstdint>
#include <stdexcept>
#include <string>

namespace zibert {

// A user-facing error. The message already says what went wrong and where
// (file:line or file:byte), e.g. "train.tsv:12: row has no label".
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

// "file:line: what" — the form every data error takes.
Error error_at(const std::string& file, std::int64_t line, const std::string& what);
// "file:line:column: what", the column 1-based and counted in bytes of the
// whole line: the form every position inside a line takes (invalid UTF-8).
Error error_at(const std::string& file, std::int64_t line, std::int64_t column, const std::string& what);

}  // namespace zibert
