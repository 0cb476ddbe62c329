#include "zibert/model/torch_checkpoint.hpp"

#include <cstring>
#include <map>
#include <variant>

#include "zibert/base/error.hpp"
#include "zibert/base/half.hpp"
#include "zibert/base/zip_archive.hpp"

namespace zibert {

std::size_t StridedTensor::count() const {
  std::size_t n = 1;
  for (auto d : shape) n *= static_cast<std::size_t>(d);
  return n;
}

void StridedTensor::copy_to(float* out) const {
  if (!is_float_dtype(dtype)) throw Error(std::string("an ") + dtype_name(dtype) + " tensor read as F32");
  const std::size_t n = count(), size = dtype_size(dtype);
  if (n == 0) return;
  const auto rank = shape.size();
  std::vector<std::int64_t> index(rank, 0);
  std::int64_t at = 0;  // element offset of index
  for (std::size_t i = 0; i < n; ++i) {
    const char* p = base + at * static_cast<std::int64_t>(size);
    if (dtype == DType::f32) {
      std::memcpy(out + i, p, 4);
    } else {
      std::uint16_t h = 0;
      std::memcpy(&h, p, 2);
      out[i] = dtype == DType::f16 ? float_from_half(h) : float_from_bfloat16(h);
    }
    for (std::size_t d = rank; d-- > 0;) {  // the next index, last dimension fastest
      at += strides[d];
      if (++index[d] < shape[d]) break;
      at -= strides[d] * shape[d];
      index[d] = 0;
    }
  }
}

StridedTensor strided(const SafeTensor& t) {
  StridedTensor s{t.dtype, t.shape, std::vector<std::int64_t>(t.shape.size(), 1), t.bytes};
  for (std::size_t d = t.shape.size(); d-- > 1;) s.strides[d - 1] = s.strides[d] * t.shape[d];
  return s;
}

namespace {

constexpr std::size_t kMaxPickle = std::size_t(64) << 20;
constexpr std::size_t kMaxObjects = 1'000'000;

// A storage of the archive: one data entry, its dtype and element count.
struct Storage {
  DType dtype;
  std::string_view bytes;
  std::uint64_t numel;
};
struct Global {
  std::string name;  // module.name
};
struct Mark {};
struct List {
  std::vector<std::size_t> items;  // object ids
  bool tuple = false;
};
struct Dict {
  std::vector<std::pair<std::size_t, std::size_t>> items;  // key, value object ids in insertion order
};
using Object = std::variant<std::monostate, bool, std::int64_t, double, std::string, List, Dict, Global, Storage,
                            StridedTensor>;

// The globals a state dict needs; anything else is refused before it is used.
const char* const kAllowed[] = {"collections.OrderedDict", "torch._utils._rebuild_tensor_v2",
                                "torch._utils._rebuild_parameter", "torch.FloatStorage", "torch.HalfStorage",
                                "torch.BFloat16Storage", "torch.LongStorage"};

DType storage_dtype(const std::string& global) {
  if (global == "torch.FloatStorage") return DType::f32;
  if (global == "torch.HalfStorage") return DType::f16;
  if (global == "torch.BFloat16Storage") return DType::bf16;
  return DType::i64;
}

class Unpickler {
 public:
  Unpickler(std::string_view pickle, const ZipArchive& zip, std::string prefix, const std::string& name)
      : p_(pickle), zip_(zip), prefix_(std::move(prefix)), name_(name) {}

  Error bad(const std::string& what) const {
    return Error(name_ + ": not a state dict zibert can read: " + what + " (data.pkl byte " + std::to_string(pos_) + ")");
  }

  std::size_t run() {
    for (;;) {
      const auto op = static_cast<unsigned char>(read(1)[0]);
      switch (op) {
        case 0x80: read(1); break;                        // PROTO
        case 0x95: read(8); break;                        // FRAME
        case '.': return pop();                           // STOP
        case '(': marks_.push_back(stack_.size()); break;  // MARK
        case '}': push(Dict{}); break;                    // EMPTY_DICT
        case ']': push(List{}); break;                    // EMPTY_LIST
        case ')': push(List{{}, true}); break;            // EMPTY_TUPLE
        case 'N': push(std::monostate{}); break;          // NONE
        case 0x88: push(true); break;                     // NEWTRUE
        case 0x89: push(false); break;                    // NEWFALSE
        case 'K': push(std::int64_t(u(1))); break;        // BININT1
        case 'M': push(std::int64_t(u(2))); break;        // BININT2
        case 'J': push(std::int64_t(std::int32_t(u(4)))); break;  // BININT
        case 0x8a: push(long1()); break;                  // LONG1
        case 'G': push(binfloat()); break;                // BINFLOAT
        case 'X': push(std::string(read(u(4)))); break;   // BINUNICODE
        case 0x8c: push(std::string(read(u(1)))); break;  // SHORT_BINUNICODE
        case 0x8d: push(std::string(read(u(8)))); break;  // BINUNICODE8
        case 'T': push(std::string(read(u(4)))); break;   // BINSTRING
        case 'U': push(std::string(read(u(1)))); break;   // SHORT_BINSTRING
        case 'q': memo_[u(1)] = top(); break;             // BINPUT
        case 'r': memo_[u(4)] = top(); break;             // LONG_BINPUT
        case 0x94: memo_[memo_.size()] = top(); break;    // MEMOIZE
        case 'h': stack_.push_back(memo(u(1))); break;    // BINGET
        case 'j': stack_.push_back(memo(u(4))); break;    // LONG_BINGET
        case 't': push(List{pop_mark(), true}); break;    // TUPLE
        case 0x85: tuple(1); break;                       // TUPLE1
        case 0x86: tuple(2); break;                       // TUPLE2
        case 0x87: tuple(3); break;                       // TUPLE3
        case 'a': append({pop()}); break;                 // APPEND
        case 'e': append(pop_mark()); break;              // APPENDS
        case 's': set_items({pop_at(1), pop_at(0)}); break;  // SETITEM: key, value
        case 'u': set_items(pop_mark()); break;           // SETITEMS
        case 'c': global(); break;                        // GLOBAL
        case 'Q': persistent_load(); break;               // BINPERSID
        case 'R': reduce(); break;                        // REDUCE
        case 'b': build(); break;                         // BUILD
        default: {
          char hex[8];
          std::snprintf(hex, sizeof hex, "0x%02x", op);
          throw bad(std::string("pickle opcode ") + hex + " is not one a state dict needs");
        }
      }
    }
  }

  const Object& object(std::size_t id) const { return objects_[id]; }

 private:
  std::string_view read(std::uint64_t n) {
    if (n > p_.size() - pos_) throw bad("the pickle ends early");
    const std::string_view s = p_.substr(pos_, n);
    pos_ += n;
    return s;
  }
  std::uint64_t u(int n) {
    const std::string_view s = read(static_cast<std::uint64_t>(n));
    std::uint64_t v = 0;
    for (int i = n; i-- > 0;) v = (v << 8) | static_cast<unsigned char>(s[i]);
    return v;
  }
  std::int64_t long1() {
    const std::uint64_t n = u(1);
    if (n > 8) throw bad("an integer of more than 64 bits");
    if (n == 0) return 0;
    std::uint64_t v = u(static_cast<int>(n));
    if (n < 8 && (v >> (8 * n - 1)) & 1) v |= ~std::uint64_t(0) << (8 * n);  // sign-extend
    return static_cast<std::int64_t>(v);
  }
  double binfloat() {  // big-endian IEEE double
    const std::string_view s = read(8);
    std::uint64_t bits = 0;
    for (char c : s) bits = (bits << 8) | static_cast<unsigned char>(c);
    double d;
    std::memcpy(&d, &bits, 8);
    return d;
  }

  std::size_t push(Object o) {
    if (objects_.size() >= kMaxObjects) throw bad("more than a million objects");
    objects_.push_back(std::move(o));
    stack_.push_back(objects_.size() - 1);
    return objects_.size() - 1;
  }
  std::size_t top() const {
    if (stack_.size() <= floor()) throw bad("the pickle's stack is empty");
    return stack_.back();
  }
  std::size_t floor() const { return marks_.empty() ? 0 : marks_.back(); }
  std::size_t pop() {
    const std::size_t id = top();
    stack_.pop_back();
    return id;
  }
  // The object depth places below the top, removed (SETITEM's key and value).
  std::size_t pop_at(std::size_t depth) {
    if (stack_.size() < floor() + depth + 1) throw bad("the pickle's stack is empty");
    const std::size_t id = stack_[stack_.size() - 1 - depth];
    stack_.erase(stack_.end() - 1 - static_cast<std::ptrdiff_t>(depth));
    return id;
  }
  std::vector<std::size_t> pop_mark() {
    if (marks_.empty()) throw bad("no mark to pop to");
    std::vector<std::size_t> items(stack_.begin() + static_cast<std::ptrdiff_t>(marks_.back()), stack_.end());
    stack_.resize(marks_.back());
    marks_.pop_back();
    return items;
  }
  std::size_t memo(std::uint64_t key) const {
    auto it = memo_.find(key);
    if (it == memo_.end()) throw bad("memo entry " + std::to_string(key) + " was never stored");
    return it->second;
  }
  void tuple(std::size_t n) {
    if (stack_.size() < floor() + n) throw bad("the pickle's stack is empty");
    List t{std::vector<std::size_t>(stack_.end() - static_cast<std::ptrdiff_t>(n), stack_.end()), true};
    stack_.resize(stack_.size() - n);
    push(std::move(t));
  }
  template <class U>
  U& top_as(const char* what) {
    U* o = std::get_if<U>(&objects_[top()]);
    if (!o) throw bad(std::string(what) + " on an object of the wrong kind");
    return *o;
  }
  void append(const std::vector<std::size_t>& items) {
    List& l = top_as<List>("APPEND");
    if (l.tuple) throw bad("APPEND on a tuple");
    l.items.insert(l.items.end(), items.begin(), items.end());
  }
  void set_items(const std::vector<std::size_t>& items) {
    if (items.size() % 2) throw bad("SETITEMS with a key and no value");
    Dict& d = top_as<Dict>("SETITEM");
    for (std::size_t i = 0; i < items.size(); i += 2) d.items.emplace_back(items[i], items[i + 1]);
  }
  void global() {
    std::string module(line()), name(line());
    const std::string full = module + "." + name;
    for (const char* allowed : kAllowed)
      if (full == allowed) {
        push(Global{full});
        return;
      }
    throw bad("global " + full + " is forbidden: zibert reads state dicts of tensors only, as "
              "torch.load(weights_only=True) does");
  }
  std::string_view line() {
    const std::size_t end = p_.find('\n', pos_);
    if (end == std::string_view::npos || end - pos_ > 256) throw bad("a GLOBAL without its name");
    const std::string_view s = p_.substr(pos_, end - pos_);
    pos_ = end + 1;
    return s;
  }
  const List& args(std::size_t id, std::size_t lo, std::size_t hi, const std::string& what) const {
    const List* l = std::get_if<List>(&objects_[id]);
    if (!l || !l->tuple || l->items.size() < lo || l->items.size() > hi) throw bad(what + " with wrong arguments");
    return *l;
  }
  std::int64_t integer(std::size_t id, const std::string& what) const {
    const auto* v = std::get_if<std::int64_t>(&objects_[id]);
    if (!v) throw bad(what + " is not an integer");
    return *v;
  }
  std::vector<std::int64_t> integers(std::size_t id, const std::string& what) const {
    const List* l = std::get_if<List>(&objects_[id]);
    if (!l || !l->tuple) throw bad(what + " is not a tuple");
    std::vector<std::int64_t> out;
    for (std::size_t item : l->items) out.push_back(integer(item, what));
    return out;
  }
  // ('storage', torch.FloatStorage, key, location, numel) → the storage in data/key.
  void persistent_load() {
    const List& pid = args(pop(), 5, 5, "a persistent id");
    const auto* kind = std::get_if<std::string>(&objects_[pid.items[0]]);
    const auto* type = std::get_if<Global>(&objects_[pid.items[1]]);
    const auto* key = std::get_if<std::string>(&objects_[pid.items[2]]);
    if (!kind || *kind != "storage" || !type || !key) throw bad("a persistent id that is not a storage");
    if (type->name.find("Storage") == std::string::npos) throw bad(type->name + " is not a storage type");
    const std::int64_t numel = integer(pid.items[4], "a storage's size");
    const DType dtype = storage_dtype(type->name);
    auto it = zip_.entries.find(prefix_ + "data/" + *key);
    if (it == zip_.entries.end()) throw bad("storage " + *key + " is not in the archive");
    if (numel < 0 || static_cast<std::uint64_t>(numel) > it->second.size() / dtype_size(dtype))
      throw bad("storage " + *key + " holds fewer bytes than its " + std::to_string(numel) + " elements");
    push(Storage{dtype, it->second, static_cast<std::uint64_t>(numel)});
  }
  void reduce() {
    const std::size_t arg_id = pop();
    const auto* callable = std::get_if<Global>(&objects_[pop()]);
    if (!callable) throw bad("REDUCE on something that is not an allowed global");
    if (callable->name == "collections.OrderedDict") {
      args(arg_id, 0, 0, "OrderedDict");
      push(Dict{});
    } else if (callable->name == "torch._utils._rebuild_tensor_v2") {
      push(rebuild_tensor(args(arg_id, 6, 7, "_rebuild_tensor_v2")));
    } else if (callable->name == "torch._utils._rebuild_parameter") {
      const List& a = args(arg_id, 3, 3, "_rebuild_parameter");
      if (!std::holds_alternative<StridedTensor>(objects_[a.items[0]])) throw bad("_rebuild_parameter of a non-tensor");
      stack_.push_back(a.items[0]);
    } else {
      throw bad("REDUCE with " + callable->name + ", which is not a callable");
    }
  }
  // (storage, storage_offset, size, stride, requires_grad, backward_hooks[, metadata])
  StridedTensor rebuild_tensor(const List& a) const {
    const auto* storage = std::get_if<Storage>(&objects_[a.items[0]]);
    if (!storage) throw bad("_rebuild_tensor_v2 without a storage");
    const std::int64_t offset = integer(a.items[1], "a storage offset");
    StridedTensor t{storage->dtype, integers(a.items[2], "a tensor's size"), integers(a.items[3], "a tensor's stride"),
                    nullptr};
    if (t.shape.size() != t.strides.size() || t.shape.size() > 8) throw bad("a tensor whose size and stride differ");
    // The last element the view reaches must lie inside the storage.
    std::uint64_t last = static_cast<std::uint64_t>(offset), count = 1;
    if (offset < 0) throw bad("a negative storage offset");
    for (std::size_t d = 0; d < t.shape.size(); ++d) {
      if (t.shape[d] < 0 || t.strides[d] < 0 || t.shape[d] > (std::int64_t(1) << 40) ||
          t.strides[d] > (std::int64_t(1) << 40))
        throw bad("a tensor with a negative or absurd size or stride");
      count *= static_cast<std::uint64_t>(t.shape[d]);
      if (count > (std::uint64_t(1) << 40)) throw bad("a tensor of more than 2^40 elements");
      if (t.shape[d] > 0) last += static_cast<std::uint64_t>(t.shape[d] - 1) * static_cast<std::uint64_t>(t.strides[d]);
    }
    if (count > 0 && last >= storage->numel) throw bad("a tensor reaching past the end of its storage");
    t.base = storage->bytes.data() + static_cast<std::size_t>(offset) * dtype_size(storage->dtype);
    return t;
  }
  void build() {
    pop();  // the state: an OrderedDict's attributes (_metadata), which a state dict's reader does not need
    if (!std::holds_alternative<Dict>(objects_[top()])) throw bad("BUILD on something that is not a dict");
  }

  std::string_view p_;
  std::size_t pos_ = 0;
  const ZipArchive& zip_;
  std::string prefix_;
  const std::string& name_;
  std::vector<Object> objects_;
  std::vector<std::size_t> stack_, marks_;
  std::map<std::uint64_t, std::size_t> memo_;
};

}  // namespace

std::vector<std::pair<std::string, StridedTensor>> read_torch_state_dict(std::string_view bytes,
                                                                          const std::string& name) {
  if (!looks_like_zip(bytes)) {
    if (bytes.size() >= 3 && static_cast<unsigned char>(bytes[0]) == 0x80 && static_cast<unsigned char>(bytes[2]) == 0x8a)
      throw Error(name + ": the legacy format of torch < 1.6 (a sequence of pickles), which zibert does not read; "
                         "re-save it with a newer torch: torch.save(torch.load(f), f)");
    throw Error(name + ": not a torch checkpoint (no zip archive)");
  }
  const ZipArchive zip = read_zip(bytes, name);
  // torch names every entry FOLDER/…, FOLDER any name: FOLDER/data.pkl is the pickle.
  std::string prefix;
  for (const auto& [entry, data] : zip.entries) {
    const auto slash = entry.find('/');
    if (slash != std::string::npos && entry.substr(slash + 1) == "data.pkl") {
      if (!prefix.empty()) throw Error(name + ": a torch archive with two data.pkl");
      prefix = entry.substr(0, slash + 1);
    }
  }
  if (prefix.empty()) throw Error(name + ": a zip archive without FOLDER/data.pkl, not one torch.save wrote");
  if (auto it = zip.entries.find(prefix + "byteorder"); it != zip.entries.end() && it->second != "little")
    throw Error(name + ": a torch archive of byte order \"" + std::string(it->second) + "\"; zibert reads little-endian ones");
  const std::string_view pickle = zip.entries.at(prefix + "data.pkl");
  if (pickle.size() > kMaxPickle) throw Error(name + ": data.pkl is over 64 MiB, more than a state dict's");
  Unpickler up(pickle, zip, prefix, name);
  const std::size_t root = up.run();
  const auto* dict = std::get_if<Dict>(&up.object(root));
  if (!dict) throw up.bad("the pickle holds no dict of tensors");
  std::vector<std::pair<std::string, StridedTensor>> out;
  for (const auto& [k, v] : dict->items) {
    const auto* key = std::get_if<std::string>(&up.object(k));
    if (!key) throw up.bad("a state dict key that is not a string");
    const auto* t = std::get_if<StridedTensor>(&up.object(v));
    if (!t) throw up.bad("state dict entry " + *key + " is not a tensor");
    out.emplace_back(*key, *t);
  }
  return out;
}

}  // namespace zibert
