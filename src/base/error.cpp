#include "zibert/base/error.hpp"

namespace zibert {

Error error_at(const std::string& file, std::int64_t line, const std::string& what) {
  return Error(file + ":" + std::to_string(line) + ": " + what);
}

Error error_at(const std::string& file, std::int64_t line, std::int64_t column, const std::string& what) {
  return Error(file + ":" + std::to_string(line) + ":" + std::to_string(column) + ": " + what);
}

}  // namespace zibert
