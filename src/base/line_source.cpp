#include "zibert/base/line_source.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "zibert/base/error.hpp"

namespace zibert {

bool is_blank(std::string_view s) { return s.find_first_not_of(" \t\r\n\f\v") == std::string_view::npos; }

LineSource LineSource::open(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw Error(path + ": " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
    ::close(fd);
    throw Error(path + ": is a directory");
  }
  return LineSource(fd, path, true);
}

LineSource::LineSource(int fd, std::string name, bool owned) : fd_(fd), name_(std::move(name)), owned_(owned) {
  struct stat st {};
  if (fd >= 0 && ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) size_ = static_cast<std::int64_t>(st.st_size);
}

LineSource LineSource::stdin_source() { return LineSource(STDIN_FILENO, "-", false); }

LineSource LineSource::from_bytes(std::string bytes, std::string name) {
  LineSource src(-1, std::move(name), false);
  src.buf_ = std::move(bytes);
  src.eof_ = true;
  src.size_ = static_cast<std::int64_t>(src.buf_.size());
  return src;
}

LineSource::LineSource(LineSource&& o) noexcept
    : fd_(o.fd_), name_(std::move(o.name_)), owned_(o.owned_), buf_(std::move(o.buf_)), pos_(o.pos_), eof_(o.eof_),
      started_(o.started_), consumed_(o.consumed_), size_(o.size_) {
  o.owned_ = false;
}

LineSource::~LineSource() {
  if (owned_) ::close(fd_);
}

bool LineSource::fill() {
  if (eof_) return false;
  if (pos_ > 0) {  // keep the buffer small: drop what has been consumed
    buf_.erase(0, pos_);
    pos_ = 0;
  }
  char block[65536];
  while (true) {
    ssize_t n = ::read(fd_, block, sizeof block);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw Error(name_ + ": read failed: " + std::strerror(errno));
    if (n == 0) {
      eof_ = true;
      return false;
    }
    buf_.append(block, static_cast<std::size_t>(n));
    return true;
  }
}

bool LineSource::next(std::string& line) {
  while (true) {
    std::size_t nl = buf_.find('\n', pos_);
    if (nl != std::string::npos || (eof_ && pos_ < buf_.size())) {
      std::size_t end = nl == std::string::npos ? buf_.size() : nl;
      line.assign(buf_, pos_, end - pos_);
      const std::size_t next = nl == std::string::npos ? buf_.size() : nl + 1;
      consumed_ += static_cast<std::int64_t>(next - pos_);
      pos_ = next;
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (!started_ && line.rfind("\xEF\xBB\xBF", 0) == 0) line.erase(0, 3);
      started_ = true;
      return true;
    }
    if (!fill()) {
      if (pos_ < buf_.size()) continue;  // the last line had no newline
      return false;
    }
  }
}

bool LineSource::ready() {
  if (eof_ || buf_.find('\n', pos_) != std::string::npos) return true;
  pollfd p{fd_, POLLIN, 0};
  return ::poll(&p, 1, 0) > 0;
}

}  // namespace zibert
