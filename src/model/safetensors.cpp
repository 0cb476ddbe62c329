#include "zibert/model/safetensors.hpp"

#include <algorithm>
#include <bit>
#include <cstring>
#include <functional>
#include <nlohmann/json.hpp>

#include "zibert/base/error.hpp"
#include "zibert/base/half.hpp"
#include "zibert/base/io.hpp"

namespace zibert {

static_assert(std::endian::native == std::endian::little, "safetensors I/O assumes a little-endian host");

namespace {
constexpr std::uint64_t kMaxHeader = 100u << 20;  // 100 MB of JSON is more than any real header
}

const char* dtype_name(DType t) {
  switch (t) {
    case DType::i8: return "I8";
    case DType::f16: return "F16";
    case DType::bf16: return "BF16";
    case DType::i64: return "I64";
    case DType::f32: break;
  }
  return "F32";
}

std::size_t dtype_size(DType t) {
  switch (t) {
    case DType::i8: return 1;
    case DType::f16: case DType::bf16: return 2;
    case DType::i64: return 8;
    case DType::f32: break;
  }
  return 4;
}

bool is_float_dtype(DType t) { return t == DType::f32 || t == DType::f16 || t == DType::bf16; }

float float_from_bfloat16(std::uint16_t b) { return std::bit_cast<float>(std::uint32_t(b) << 16); }

namespace {

std::uint64_t byte_size(const TensorRef& t) {
  std::uint64_t count = 1;
  for (auto d : t.shape) count *= static_cast<std::uint64_t>(d);
  return dtype_size(t.dtype) * count;
}

// The file's pieces in order: the length and JSON header (in header), then
// each tensor's bytes where they are.
std::vector<std::string_view> file_pieces(const std::map<std::string, std::string>& metadata,
                                          const std::vector<TensorRef>& tensors, std::string& header) {
  nlohmann::json json = nlohmann::json::object();
  json["__metadata__"] = metadata;
  std::uint64_t offset = 0;
  for (const TensorRef& t : tensors) {
    const std::uint64_t bytes = byte_size(t);
    json[t.name] = {{"dtype", dtype_name(t.dtype)}, {"shape", t.shape}, {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  std::string text = json.dump();
  while ((8 + text.size()) % 8 != 0) text += ' ';  // align the data to 8 bytes
  header.assign(8, '\0');
  const std::uint64_t n = text.size();
  std::memcpy(header.data(), &n, 8);
  header += text;
  std::vector<std::string_view> pieces{header};
  for (const TensorRef& t : tensors) pieces.emplace_back(static_cast<const char*>(t.data), byte_size(t));
  return pieces;
}

}  // namespace

std::string encode_safetensors(const std::map<std::string, std::string>& metadata,
                               const std::vector<TensorRef>& tensors) {
  std::string header;
  const std::vector<std::string_view> pieces = file_pieces(metadata, tensors, header);
  std::size_t size = 0;
  for (std::string_view piece : pieces) size += piece.size();
  std::string out;
  out.reserve(size);
  for (std::string_view piece : pieces) out += piece;
  return out;
}

void save_safetensors(const std::string& path, const std::map<std::string, std::string>& metadata,
                      const std::vector<TensorRef>& tensors) {
  std::string header;
  write_file_atomic(path, file_pieces(metadata, tensors, header));
}

void SafeTensor::copy_to(float* out) const {
  if (!is_float_dtype(dtype)) throw Error(std::string("an ") + dtype_name(dtype) + " tensor read as F32");
  if (dtype == DType::f32) {
    if (count) std::memcpy(out, bytes, 4 * count);
    return;
  }
  for (std::size_t i = 0; i < count; ++i) {
    std::uint16_t h = 0;
    std::memcpy(&h, bytes + 2 * i, 2);
    out[i] = dtype == DType::f16 ? float_from_half(h) : float_from_bfloat16(h);
  }
}

void SafeTensor::copy_to(std::int8_t* out) const {
  if (dtype != DType::i8) throw Error(std::string("an ") + dtype_name(dtype) + " tensor read as I8");
  if (count) std::memcpy(out, bytes, count);
}

std::size_t json_nesting_depth(std::string_view json) {
  std::size_t depth = 0, deepest = 0;
  bool in_string = false, escaped = false;
  for (char ch : json) {
    if (in_string) {
      if (escaped)
        escaped = false;
      else if (ch == '\\')
        escaped = true;
      else if (ch == '"')
        in_string = false;
    } else if (ch == '"') {
      in_string = true;
    } else if (ch == '[' || ch == '{') {
      deepest = std::max(deepest, ++depth);
    } else if ((ch == ']' || ch == '}') && depth > 0) {
      --depth;
    }
  }
  return deepest;
}

namespace {

using Bad = std::function<Error(const std::string&)>;

// The header's JSON, its length checked against the file.
nlohmann::json read_header(std::string_view bytes, const Bad& bad, std::uint64_t& header_len) {
  if (bytes.size() < 8) throw bad("truncated (" + std::to_string(bytes.size()) + " bytes, no header length)");
  std::memcpy(&header_len, bytes.data(), 8);
  if (header_len > bytes.size() - 8)
    throw bad("header length " + std::to_string(header_len) + " exceeds the file size " +
              std::to_string(bytes.size()));
  if (header_len > kMaxHeader) throw bad("header length " + std::to_string(header_len) + " is absurdly large");
  const std::string_view header_text = bytes.substr(8, header_len);
  if (json_nesting_depth(header_text) > kMaxJsonDepth)
    throw bad("header is JSON nested more than " + std::to_string(kMaxJsonDepth) + " deep");
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(bytes.begin() + 8, bytes.begin() + 8 + static_cast<std::ptrdiff_t>(header_len));
  } catch (const nlohmann::json::exception& e) {
    throw bad(std::string("header is not JSON (") + e.what() + ")");
  }
  if (!header.is_object()) throw bad("header is not a JSON object");
  return header;
}

// One tensor's entry: dtype, shape and offsets inside the data (data_len bytes at data).
SafeTensor tensor_entry(const std::string& key, const nlohmann::json& value, const char* data,
                        std::uint64_t data_len, const Bad& bad, std::uint64_t& begin, std::uint64_t& end) {
  const std::string where = "tensor \"" + key + "\"";
  if (!value.is_object()) throw bad(where + " is not an object");
  if (!value.contains("dtype") || !value["dtype"].is_string()) throw bad(where + " has no dtype");
  const std::string dtype = value["dtype"].get<std::string>();
  SafeTensor t;
  bool known = false;
  for (DType d : {DType::f32, DType::i8, DType::f16, DType::bf16, DType::i64})
    if (dtype == dtype_name(d)) t.dtype = d, known = true;
  if (!known) throw bad(where + " has dtype " + dtype + "; zibert reads F32, F16, BF16, I8 and I64");
  if (!value.contains("shape") || !value["shape"].is_array()) throw bad(where + " has no shape");
  if (!value.contains("data_offsets") || !value["data_offsets"].is_array() || value["data_offsets"].size() != 2)
    throw bad(where + " has no [begin, end] data_offsets");
  std::uint64_t count = 1;
  for (const auto& d : value["shape"]) {
    if (!d.is_number_unsigned()) throw bad(where + " has a shape entry that is not a non-negative integer");
    std::uint64_t dim = d.get<std::uint64_t>();
    if (dim != 0 && count > (std::uint64_t(1) << 60) / dim) throw bad(where + " has a shape too large");
    count *= dim;
    t.shape.push_back(static_cast<std::int64_t>(dim));
  }
  const auto& offs = value["data_offsets"];
  if (!offs[0].is_number_unsigned() || !offs[1].is_number_unsigned())
    throw bad(where + " has data_offsets that are not non-negative integers");
  begin = offs[0].get<std::uint64_t>();
  end = offs[1].get<std::uint64_t>();
  if (begin > end) throw bad(where + " has data_offsets with begin > end");
  if (end > data_len)
    throw bad(where + " has data_offsets past the end of the file (" + std::to_string(end) + " > " +
              std::to_string(data_len) + ")");
  const std::uint64_t size = dtype_size(t.dtype) * count;
  if (end - begin != size)
    throw bad(where + " has " + std::to_string(end - begin) + " bytes but its shape needs " + std::to_string(size));
  t.bytes = data + begin;
  t.count = count;
  return t;
}

}  // namespace

SafeTensors decode_safetensors(std::string_view bytes, const std::string& name) {
  const Bad bad = [&](const std::string& what) { return Error(name + ": not a valid safetensors file: " + what); };
  std::uint64_t header_len = 0;
  const nlohmann::json header = read_header(bytes, bad, header_len);
  const std::uint64_t data_len = bytes.size() - 8 - header_len;
  const char* data = bytes.data() + 8 + header_len;
  SafeTensors out;
  struct Span {
    std::uint64_t begin, end;
    std::string name;
  };
  std::vector<Span> spans;
  for (const auto& [key, value] : header.items()) {
    if (key == "__metadata__") {
      if (!value.is_object()) throw bad("__metadata__ is not an object");
      for (const auto& [mk, mv] : value.items()) {
        if (!mv.is_string()) throw bad("__metadata__ entry \"" + mk + "\" is not a string");
        out.metadata[mk] = mv.get<std::string>();
      }
      continue;
    }
    std::uint64_t begin = 0, end = 0;
    out.tensors.emplace(key, tensor_entry(key, value, data, data_len, bad, begin, end));
    spans.push_back({begin, end, key});
  }
  std::sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) { return a.begin < b.begin; });
  for (std::size_t i = 1; i < spans.size(); ++i)
    if (spans[i].begin < spans[i - 1].end)
      throw bad("tensors \"" + spans[i - 1].name + "\" and \"" + spans[i].name + "\" overlap");
  return out;
}

}  // namespace zibert
