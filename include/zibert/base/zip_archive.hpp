// The entries of a zip archive as torch.save writes them (pytorch_model.bin):
// stored, not compressed, possibly zip64. The reader trusts nothing in the
// bytes: every size and offset is checked against the archive.
#pragma once
#include <map>
#include <string>
#include <string_view>

namespace zibert {

struct ZipArchive {
  // Entry name → its bytes, pointing into the archive's bytes (which must
  // outlive this).
  std::map<std::string, std::string_view> entries;
};

// True when bytes begin as a zip archive does (a local file header).
bool looks_like_zip(std::string_view bytes);

// Reads the central directory (zip64 too). Throws Error, prefixed with name,
// on a truncated or inconsistent archive, a compressed or encrypted entry,
// an entry outside the archive, or two entries of one name.
ZipArchive read_zip(std::string_view bytes, const std::string& name);

}  // namespace zibert
