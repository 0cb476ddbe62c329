#include "zibert/base/io.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <vector>

#include "zibert/base/error.hpp"

namespace zibert {
namespace {

std::string dir_of(const std::string& path) {
  auto slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

std::string sys_error() { return std::strerror(errno); }

}  // namespace

void check_output_path(const std::string& path) {
  if (path.empty()) throw Error("output path is empty");
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode))
    throw Error(path + ": exists and is not a regular file; refusing to replace it");
  std::string dir = dir_of(path);
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    throw Error(path + ": directory " + dir + " does not exist");
  if (::access(dir.c_str(), W_OK) != 0) throw Error(path + ": directory " + dir + " is not writable");
  // access() says yes to root everywhere, /proc included: create (and remove)
  // the temporary file write_file_atomic will need, so that a run fails
  // before its work, not when it saves.
  std::string probe = path + ".tmp.XXXXXX";
  const int fd = ::mkstemp(probe.data());
  if (fd < 0) throw Error(path + ": cannot create a file there: " + sys_error());
  ::close(fd);
  ::unlink(probe.c_str());
}

void check_not_an_input(const NamedPath& output, const std::vector<NamedPath>& inputs) {
  struct stat out {};
  if (output.path.empty() || output.path == "-" || ::stat(output.path.c_str(), &out) != 0) return;
  for (const NamedPath& input : inputs) {
    struct stat in {};
    if (input.path.empty() || input.path == "-" || ::stat(input.path.c_str(), &in) != 0) continue;
    if (in.st_dev == out.st_dev && in.st_ino == out.st_ino)
      throw Error(output.path + ": " + output.flag + " would overwrite " + input.flag + "'s file" +
                  (input.path == output.path ? "" : " (" + input.path + ")") + "; give it a path of its own");
  }
}

void write_file_atomic(const std::string& path, std::string_view bytes) {
  write_file_atomic(path, std::vector<std::string_view>{bytes});
}

void write_file_atomic(const std::string& path, const std::vector<std::string_view>& pieces) {
  check_output_path(path);
  std::string tmpl = path + ".tmp.XXXXXX";
  std::vector<char> name(tmpl.begin(), tmpl.end());
  name.push_back('\0');
  int fd = ::mkstemp(name.data());
  if (fd < 0) throw Error(path + ": cannot create a temporary file: " + sys_error());
  auto fail = [&](const std::string& what) {
    std::string why = sys_error();
    ::close(fd);
    ::unlink(name.data());
    return Error(path + ": " + what + ": " + why);
  };
  for (std::string_view bytes : pieces) {
    const char* p = bytes.data();
    std::size_t left = bytes.size();
    while (left > 0) {
      ssize_t n = ::write(fd, p, left);
      if (n < 0) {
        if (errno == EINTR) continue;
        throw fail("write failed");
      }
      p += n;
      left -= static_cast<std::size_t>(n);
    }
  }
  if (::fchmod(fd, 0644) != 0) throw fail("chmod failed");
  if (::fsync(fd) != 0) throw fail("fsync failed");
  if (::close(fd) != 0) {
    std::string why = sys_error();
    ::unlink(name.data());
    throw Error(path + ": close failed: " + why);
  }
  // Checked again: something that is not a regular file may have appeared at
  // path while the bytes were written, and it must not be replaced.
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode) && !S_ISLNK(st.st_mode)) {
    ::unlink(name.data());
    throw Error(path + ": exists and is not a regular file; refusing to replace it");
  }
  if (::rename(name.data(), path.c_str()) != 0) {
    std::string why = sys_error();
    ::unlink(name.data());
    throw Error(path + ": rename failed: " + why);
  }
}

std::string file_fingerprint(const std::string& path) {
  MappedFile file(path);
  return bytes_fingerprint(file.bytes());
}

std::string read_stdin() {
  std::string out;
  char buf[1 << 16];
  for (;;) {
    const ssize_t got = ::read(STDIN_FILENO, buf, sizeof buf);
    if (got == 0) return out;
    if (got < 0) {
      if (errno == EINTR) continue;
      throw Error(std::string("(standard input): cannot read (") + std::strerror(errno) + ")");
    }
    out.append(buf, static_cast<std::size_t>(got));
  }
}

std::string bytes_fingerprint(std::string_view bytes) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (char ch : bytes) {
    h ^= static_cast<unsigned char>(ch);
    h *= 0x100000001b3ULL;
  }
  char buf[20];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

MappedFile::MappedFile(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw Error(path + ": " + sys_error());
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw Error(path + ": not a regular file");
  }
  size_ = static_cast<std::size_t>(st.st_size);
  if (size_ > 0) {
    data_ = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
    if (data_ == MAP_FAILED) {
      std::string why = sys_error();
      ::close(fd);
      throw Error(path + ": cannot map the file: " + why);
    }
  }
  ::close(fd);
}

MappedFile::~MappedFile() {
  if (data_ && data_ != MAP_FAILED) ::munmap(data_, size_);
}

}  // namespace zibert
