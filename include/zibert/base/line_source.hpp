// Lines from a file or stdin, read in blocks straight from the descriptor so
// that the caller can tell when no more input is waiting (tail -f | zibert).
// Every reader of text files goes through it, so a CRLF line end, a UTF-8
// BOM and a last line without a newline are handled in this one place.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

namespace zibert {

// True when s holds nothing but white space (or nothing): a blank line, an empty text.
bool is_blank(std::string_view s);

class LineSource {
 public:
  static LineSource open(const std::string& path);  // throws Error: missing, directory, unreadable
  static LineSource stdin_source();
  // Lines of bytes already in memory (tests, fuzz targets); name is for messages.
  static LineSource from_bytes(std::string bytes, std::string name);
  LineSource(LineSource&& other) noexcept;
  LineSource& operator=(LineSource&&) = delete;
  ~LineSource();

  // The next line without its "\n" (and "\r"); a UTF-8 BOM at the start of the
  // input is dropped; a last line without a newline counts. False at the end.
  bool next(std::string& line);
  // True when next() would return without waiting for more input.
  bool ready();
  const std::string& name() const { return name_; }
  // Bytes of the input the lines returned so far took, line ends included;
  // and the input's size when it is a regular file (-1 when unknown: a pipe, a terminal).
  std::int64_t consumed() const { return consumed_; }
  std::int64_t size() const { return size_; }

 private:
  LineSource(int fd, std::string name, bool owned);
  bool fill();  // reads one block; false at end of input

  int fd_;
  std::string name_;
  bool owned_;
  std::string buf_;
  std::size_t pos_ = 0;
  bool eof_ = false, started_ = false;
  std::int64_t consumed_ = 0, size_ = -1;
};

}  // namespace zibert
