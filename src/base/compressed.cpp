#include "zibert/base/compressed.hpp"

#include <bzlib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "zibert/base/error.hpp"

namespace zibert {

std::string decompress_if_bzip2(std::string bytes, const std::string& name) {
  if (bytes.compare(0, 3, "BZh") != 0) return bytes;
  std::string out(bytes.size() * 6 + 4096, '\0');
  std::size_t in_at = 0, out_at = 0;
  while (in_at < bytes.size()) {  // one stream after another
    bz_stream s{};
    if (BZ2_bzDecompressInit(&s, 0, 0) != BZ_OK) throw Error(name + ": cannot start bzip2 decompression");
    int rc = BZ_OK;
    while (rc == BZ_OK) {
      if (out_at == out.size()) out.resize(out.size() * 2);
      s.next_in = bytes.data() + in_at;
      s.avail_in = static_cast<unsigned>(std::min<std::size_t>(bytes.size() - in_at, 1u << 30));
      s.next_out = out.data() + out_at;
      s.avail_out = static_cast<unsigned>(std::min<std::size_t>(out.size() - out_at, 1u << 30));
      const unsigned in_before = s.avail_in, out_before = s.avail_out;
      rc = BZ2_bzDecompress(&s);
      in_at += in_before - s.avail_in;
      out_at += out_before - s.avail_out;
      if (rc == BZ_OK && in_at == bytes.size() && s.avail_out > 0) rc = BZ_UNEXPECTED_EOF;
    }
    BZ2_bzDecompressEnd(&s);
    if (rc != BZ_STREAM_END)
      throw Error(name + ": corrupt bzip2 data at byte " + std::to_string(in_at) +
                  (rc == BZ_UNEXPECTED_EOF ? " (the file ends early)" : ""));
    // Whatever follows a stream is another stream, or padding of zero bytes.
    while (in_at < bytes.size() && bytes[in_at] == '\0') ++in_at;
    if (in_at < bytes.size() && bytes.compare(in_at, 3, "BZh") != 0)
      throw Error(name + ": bytes after the bzip2 data at byte " + std::to_string(in_at));
  }
  out.resize(out_at);
  return out;
}

std::string read_file_decompressed(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw Error(path + ": is a directory, not a file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path + ": cannot open it");
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) throw Error(path + ": cannot read it");
  return decompress_if_bzip2(std::move(bytes), path);
}

}  // namespace zibert
