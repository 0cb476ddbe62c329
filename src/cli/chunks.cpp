#include "chunks.hpp"

#include <cstdio>

namespace zibert::cli {

std::vector<std::int32_t> encode_line(const Tokenizer& tokenizer, const std::string& text, const LineSource& src,
                                      std::int64_t line_no) {
  if (text.find('\0') != std::string::npos) throw error_at(src.name(), line_no, "binary file (NUL byte); not text");
  try {
    return tokenizer.encode(text);
  } catch (const Utf8Error& e) {
    throw Error(src.name() + ":" + std::to_string(line_no) + ":" + std::to_string(e.byte + 1) +
                ": invalid UTF-8 (--invalid replace carries on)");
  }
}

Chunk read_chunk(LineSource& src, const Tokenizer& tokenizer, std::int64_t& line_no) {
  Chunk chunk;
  chunk.first = line_no + 1;
  std::string line;
  try {
    while (chunk.lines.size() < kChunkLines) {
      if (!chunk.lines.empty() && !src.ready()) break;  // input stalls: answer what has arrived
      if (!src.next(line)) {
        chunk.eof = true;
        break;
      }
      ++line_no;
      chunk.ids.push_back(encode_line(tokenizer, line, src, line_no));
      chunk.lines.push_back(std::move(line));
    }
  } catch (const Error&) {
    chunk.error = std::current_exception();
  }
  return chunk;
}

std::string display_name(const LineSource& src) { return src.name() == "-" ? "(standard input)" : src.name(); }

void write_out(const std::string& text) {
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fflush(stdout);
}

}  // namespace zibert::cli
