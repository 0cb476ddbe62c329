#include "zibert/base/zip_archive.hpp"

#include <cstdint>
#include <cstring>

#include "zibert/base/error.hpp"

namespace zibert {

namespace {

constexpr std::uint32_t kLocalHeader = 0x04034b50, kCentralHeader = 0x02014b50, kEnd = 0x06054b50,
                        kEnd64 = 0x06064b50, kEnd64Locator = 0x07064b50;
constexpr std::size_t kEndSize = 22, kEnd64LocatorSize = 20, kEnd64Size = 56, kCentralSize = 46, kLocalSize = 30;

// Little-endian fields at checked offsets.
class Bytes {
 public:
  Bytes(std::string_view bytes, const std::string& name) : b_(bytes), name_(name) {}
  Error bad(const std::string& what) const { return Error(name_ + ": not a readable zip archive: " + what); }
  template <class U>
  U at(std::uint64_t offset) const {
    if (offset > b_.size() || b_.size() - offset < sizeof(U)) throw bad("truncated");
    U v;
    std::memcpy(&v, b_.data() + offset, sizeof(U));
    return v;
  }
  std::string_view span(std::uint64_t offset, std::uint64_t size, const std::string& what) const {
    if (offset > b_.size() || b_.size() - offset < size) throw bad(what + " lies outside the archive");
    return b_.substr(offset, size);
  }
  std::size_t size() const { return b_.size(); }

 private:
  std::string_view b_;
  const std::string& name_;
};

// The end-of-central-directory record: searched backwards over the comment.
std::uint64_t find_end(const Bytes& b) {
  if (b.size() < kEndSize) throw b.bad("too short for a zip archive");
  const std::uint64_t last = b.size() - kEndSize;
  const std::uint64_t first = last > 0xFFFF ? last - 0xFFFF : 0;
  for (std::uint64_t pos = last + 1; pos-- > first;)
    if (b.at<std::uint32_t>(pos) == kEnd) return pos;
  throw b.bad("no end of central directory");
}

}  // namespace

bool looks_like_zip(std::string_view bytes) {
  std::uint32_t sig = 0;
  if (bytes.size() < 4) return false;
  std::memcpy(&sig, bytes.data(), 4);
  return sig == kLocalHeader;
}

ZipArchive read_zip(std::string_view bytes, const std::string& name) {
  const Bytes b(bytes, name);
  const std::uint64_t end = find_end(b);
  std::uint64_t entries = b.at<std::uint16_t>(end + 10), dir_size = b.at<std::uint32_t>(end + 12),
                dir_offset = b.at<std::uint32_t>(end + 16);
  if (entries == 0xFFFF || dir_size == 0xFFFFFFFF || dir_offset == 0xFFFFFFFF) {  // zip64
    if (end < kEnd64LocatorSize || b.at<std::uint32_t>(end - kEnd64LocatorSize) != kEnd64Locator)
      throw b.bad("zip64 sizes without a zip64 end-of-directory locator");
    const auto end64 = b.at<std::uint64_t>(end - kEnd64LocatorSize + 8);
    if (b.at<std::uint32_t>(end64) != kEnd64) throw b.bad("zip64 end of central directory not where its locator says");
    (void)b.span(end64, kEnd64Size, "the zip64 end of central directory");
    entries = b.at<std::uint64_t>(end64 + 32);
    dir_size = b.at<std::uint64_t>(end64 + 40);
    dir_offset = b.at<std::uint64_t>(end64 + 48);
  }
  (void)b.span(dir_offset, dir_size, "the central directory");
  if (entries > dir_size / kCentralSize) throw b.bad("more entries than the central directory can hold");
  ZipArchive out;
  std::uint64_t pos = dir_offset;
  for (std::uint64_t i = 0; i < entries; ++i) {
    if (b.at<std::uint32_t>(pos) != kCentralHeader) throw b.bad("central directory entry " + std::to_string(i) + " is damaged");
    const auto flags = b.at<std::uint16_t>(pos + 8), method = b.at<std::uint16_t>(pos + 10);
    std::uint64_t compressed = b.at<std::uint32_t>(pos + 20), size = b.at<std::uint32_t>(pos + 24);
    const auto name_len = b.at<std::uint16_t>(pos + 28), extra_len = b.at<std::uint16_t>(pos + 30),
               comment_len = b.at<std::uint16_t>(pos + 32);
    std::uint64_t local = b.at<std::uint32_t>(pos + 42);
    const std::string entry(b.span(pos + kCentralSize, name_len, "an entry name"));
    // zip64 extra field: the 64-bit values of the fields saturated above, in this order.
    const std::uint64_t extra = pos + kCentralSize + name_len;
    for (std::uint64_t e = extra; e + 4 <= extra + extra_len;) {
      const auto id = b.at<std::uint16_t>(e), len = b.at<std::uint16_t>(e + 2);
      if (e + 4 + len > extra + extra_len) throw b.bad("entry " + entry + " has a damaged extra field");
      if (id == 0x0001) {
        std::uint64_t f = e + 4;
        for (std::uint64_t* field : {&size, &compressed, &local}) {
          if (*field != 0xFFFFFFFF) continue;
          if (f + 8 > e + 4 + len) throw b.bad("entry " + entry + " has a short zip64 extra field");
          *field = b.at<std::uint64_t>(f);
          f += 8;
        }
      }
      e += 4 + len;
    }
    if (flags & 1) throw b.bad("entry " + entry + " is encrypted");
    if (method != 0)
      throw b.bad("entry " + entry + " is compressed (method " + std::to_string(method) +
                  "); torch.save stores its entries uncompressed");
    if (compressed != size) throw b.bad("entry " + entry + " is stored with two different sizes");
    if (b.at<std::uint32_t>(local) != kLocalHeader) throw b.bad("entry " + entry + " has no local header");
    const std::uint64_t data = local + kLocalSize + b.at<std::uint16_t>(local + 26) + b.at<std::uint16_t>(local + 28);
    if (!out.entries.emplace(entry, b.span(data, size, "entry " + entry)).second)
      throw b.bad("two entries are named " + entry);
    pos += kCentralSize + name_len + extra_len + comment_len;
  }
  return out;
}

}  // namespace zibert
