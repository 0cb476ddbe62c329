// Input lines for the commands that answer one record per line (classify,
// embed): read in chunks that end early when the input stalls, so that lines
// piped in one at a time get their answer at once, and encoded with the
// model's tokenizer; a bad line is an error naming file, line and byte,
// after the lines before it have been answered.
#pragma once
#include <cstdint>
#include <exception>
#include <functional>
#include <string>
#include <vector>

#include "zibert/base/line_source.hpp"
#include "zibert/text/tokenizer.hpp"

namespace zibert::cli {

inline constexpr std::size_t kChunkLines = 1024;

// The line's token ids (Tokenizer::encode); a NUL byte or invalid UTF-8 is an
// Error naming src's file and the line (and byte).
std::vector<std::int32_t> encode_line(const Tokenizer& tokenizer, const std::string& text, const LineSource& src,
                                      std::int64_t line_no);

struct Chunk {
  std::vector<std::string> lines;               // as read, without the line end
  std::vector<std::vector<std::int32_t>> ids;   // encoded
  std::int64_t first = 1;                       // the line number of lines[0]
  bool eof = false;                             // the input has ended
  std::exception_ptr error;                     // a bad line ended the chunk: answer it, then rethrow
};

// Up to kChunkLines lines (fewer when the input stalls); line_no counts the
// lines of src read so far.
Chunk read_chunk(LineSource& src, const Tokenizer& tokenizer, std::int64_t& line_no);

// Reads src to its end chunk by chunk, handing each to answer (the lines
// before a bad one too), then rethrows a bad line's error. answer returns
// false to stop early; the result says whether the input was read to its end.
bool for_each_chunk(LineSource& src, const Tokenizer& tokenizer, std::int64_t& line_no,
                    const std::function<bool(const Chunk&)>& answer);

// "(standard input)" for "-", else the file name.
std::string display_name(const LineSource& src);
// An input file, or standard input for "-". Standard input from a terminal is
// said on stderr in one line, so a command that waits for typing (classify -h,
// grep's no-filename, with no file) does not look hung.
LineSource open_input(const std::string& path);

// Writes text (whole records, each ending in a newline) to stdout at once: a
// later error must not lose what was already decided. Each write(2) carries
// whole records, at most PIPE_BUF bytes of them unless one record is longer,
// so that writers sharing a pipe never interleave inside a line. A failed
// write is an Error.
void write_out(const std::string& text);

}  // namespace zibert::cli
