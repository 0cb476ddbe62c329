// A whole file's bytes, decompressed when it is bzip2 (as Debian ships some
// data files, Unicode's Unihan tables among them).
#pragma once
#include <string>
#include <string_view>

namespace zibert {

// The file's bytes; a file starting with bzip2's "BZh" header is decompressed
// (concatenated streams too). Throws Error naming the file: missing,
// unreadable, or corrupt compressed data.
std::string read_file_decompressed(const std::string& path);

// The same for bytes already in memory; name is for messages.
std::string decompress_if_bzip2(std::string bytes, const std::string& name);

}  // namespace zibert
