// File helpers: atomic writes, output-path checks, whole-file reads.
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace zibert {

// Fails early (before any work) when path cannot become a regular file: a
// missing or read-only directory, or an existing non-regular file.
void check_output_path(const std::string& path);

// A file a command reads or writes, and the flag that named it (for messages).
struct NamedPath {
  std::string flag, path;
};
// Throws when output is the same file as one of the inputs (same device and
// inode, whatever the spelling), so that a mistyped --out cannot replace the
// data or model the command is reading. Inputs that do not exist and "-"
// (standard input) are skipped.
void check_not_an_input(const NamedPath& output, const std::vector<NamedPath>& inputs);

// Writes bytes to a temporary file beside path, fsyncs it and renames it over
// path, so readers see the old file or the new one, never half of one.
void write_file_atomic(const std::string& path, std::string_view bytes);
// The same for bytes in pieces, written one after the other: a large file is
// written from where its parts already are, never gathered into one copy.
void write_file_atomic(const std::string& path, const std::vector<std::string_view>& pieces);

// A fingerprint of a file's bytes (64-bit FNV-1a, hex): checkpoints use it to
// tell that --resume sees the data the run started with.
std::string file_fingerprint(const std::string& path);
std::string bytes_fingerprint(std::string_view bytes);  // the same hash of bytes in memory
// All of standard input (Error when it cannot be read).
std::string read_stdin();

// A file mapped read-only into memory: the model loader reads it in place,
// with no buffer to allocate, zero and fill.
class MappedFile {
 public:
  explicit MappedFile(const std::string& path);  // throws Error naming the path
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();
  std::string_view bytes() const { return {static_cast<const char*>(data_), size_}; }

 private:
  void* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace zibert
