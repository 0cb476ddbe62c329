#include "chunks.hpp"

#include <limits.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace zibert::cli {

std::vector<std::int32_t> encode_line(const Tokenizer& tokenizer, const std::string& text, const LineSource& src,
                                      std::int64_t line_no) {
  if (text.find('\0') != std::string::npos) throw error_at(src.name(), line_no, "binary file (NUL byte); not text");
  try {
    return tokenizer.encode(text);
  } catch (const Utf8Error& e) {
    throw error_at(src.name(), line_no, e.byte + 1, "invalid UTF-8 (--invalid replace carries on)");
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

bool for_each_chunk(LineSource& src, const Tokenizer& tokenizer, std::int64_t& line_no,
                    const std::function<bool(const Chunk&)>& answer) {
  for (bool eof = false; !eof;) {
    const Chunk chunk = read_chunk(src, tokenizer, line_no);
    const bool more = answer(chunk);
    if (chunk.error) std::rethrow_exception(chunk.error);
    if (!more) return false;
    eof = chunk.eof;
  }
  return true;
}

std::string display_name(const LineSource& src) { return src.name() == "-" ? "(standard input)" : src.name(); }

LineSource open_input(const std::string& path) {
  if (path != "-") return LineSource::open(path);
  if (::isatty(STDIN_FILENO)) std::fputs("zibert: reading standard input; Ctrl-D ends it\n", stderr);
  return LineSource::stdin_source();
}

namespace {

// All of [data, data + size) to stdout, retrying short writes and EINTR.
void write_all(const char* data, std::size_t size) {
  while (size > 0) {
    const ssize_t n = ::write(STDOUT_FILENO, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw Error(std::string("write error on standard output: ") + std::strerror(errno));
    data += n;
    size -= static_cast<std::size_t>(n);
  }
}

}  // namespace

void write_out(const std::string& text) {
  std::fflush(stdout);  // whatever went through stdio first stays first
  // Whole records per write(2), at most PIPE_BUF bytes where they fit: such a
  // write to a pipe is atomic, so several zibert processes writing into one
  // pipe (xargs -P, parallel without -k) never tear each other's lines.
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = start;  // past the last whole record that keeps [start, end) within PIPE_BUF
    while (end < text.size()) {
      std::size_t nl = text.find('\n', end);
      const std::size_t next = nl == std::string::npos ? text.size() : nl + 1;
      if (next - start > PIPE_BUF && end > start) break;
      end = next;
      if (end - start >= PIPE_BUF) break;  // a record longer than PIPE_BUF goes alone
    }
    write_all(text.data() + start, end - start);
    start = end;
  }
}

}  // namespace zibert::cli
