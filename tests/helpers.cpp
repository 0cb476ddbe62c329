#include "helpers.hpp"

#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <vector>

#include "zibert/model/safetensors.hpp"

namespace zibert::test {

ModelConfig model_shape(std::int64_t vocab, std::int64_t max_len, std::int64_t dim, std::int64_t heads,
                        std::int64_t ffn, std::int64_t layers, std::int64_t labels, double dropout) {
  ModelConfig c;
  c.vocab_size = vocab;
  c.max_len = max_len;
  c.dim = dim;
  c.heads = heads;
  c.ffn = ffn;
  c.layers = layers;
  c.labels = labels;
  c.dropout = dropout;
  return c;
}

Model tiny_classifier(std::uint64_t seed) { return random_classifier("佛跳墙是一道福建名菜他们点了一坛 abc", 16, 8, 2, 16, seed); }

Model random_classifier(const std::string& text, std::int64_t max_len, std::int64_t dim, std::int64_t heads,
                             std::int64_t ffn, std::uint64_t seed) {
  VocabBuilder builder;
  builder.add(normalize(text, Normalization{}));
  Vocab vocab = builder.build(1);
  const ModelConfig cfg = model_shape(vocab.size(), max_len, dim, heads, ffn, 2, 2, 0.0);
  Model model{cfg, Tokenizer(vocab, Normalization{}), ClassifierPart{{"0", "1"}, "1", std::nullopt, std::nullopt},
              {{"note", "test"}}, Bert<float>(cfg), std::nullopt};
  model.net.init_weights(seed);
  return model;
}

Model tiny_encoder(std::uint64_t seed) {
  Model model = tiny_classifier(seed);
  ModelConfig cfg = model.config;
  cfg.task = Task::mlm;
  cfg.labels = 0;
  Model enc{cfg, model.tokenizer, ClassifierPart{}, {{"note", "test"}}, Bert<float>(cfg), std::nullopt};
  enc.net.init_weights(seed);
  return enc;
}

namespace {

// The directories temp_dir made, removed with all they hold when the test
// process exits (kept when ZIBERT_KEEP_TEST_DIRS is set, to look into a
// failure). Tests make some read-only or unreadable: they get their
// owner's permissions back first.
class TempDirs {
 public:
  ~TempDirs() {
    const char* keep = std::getenv("ZIBERT_KEEP_TEST_DIRS");
    if (keep && *keep) return;
    for (const std::string& dir : dirs_) remove(dir);
  }
  void add(const std::string& dir) {
    std::lock_guard<std::mutex> lock(mutex_);
    dirs_.push_back(dir);
  }

 private:
  static void remove(const std::string& dir) {
    namespace fs = std::filesystem;
    std::error_code ec;
    fs::permissions(dir, fs::perms::owner_all, fs::perm_options::add, ec);
    for (auto it = fs::recursive_directory_iterator(dir, fs::directory_options::skip_permission_denied, ec);
         !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
      if (it->is_directory(ec) && !it->is_symlink(ec)) {
        fs::permissions(it->path(), fs::perms::owner_all, fs::perm_options::add, ec);
      }
    }
    fs::remove_all(dir, ec);
  }
  std::mutex mutex_;
  std::vector<std::string> dirs_;
};

TempDirs& temp_dirs() {
  static TempDirs dirs;
  return dirs;
}

}  // namespace

std::string temp_dir() {
  const char* base = std::getenv("TMPDIR");
  std::string tmpl = std::string(base && *base ? base : "/tmp") + "/zibert-test-XXXXXX";
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  if (!::mkdtemp(buf.data())) throw std::runtime_error("mkdtemp failed");
  temp_dirs().add(buf.data());
  return buf.data();
}

namespace {

// Size and modification time: what changes when a binary is rebuilt.
std::string file_stamp(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) throw std::runtime_error("cannot stat " + path);
  return path + " " + std::to_string(st.st_size) + " " + std::to_string(st.st_mtim.tv_sec) + "." +
         std::to_string(st.st_mtim.tv_nsec) + "\n";
}

// An exclusive flock(2) held for the object's life.
class FileLock {
 public:
  explicit FileLock(const std::string& path) : fd_(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644)) {
    if (fd_ < 0 || ::flock(fd_, LOCK_EX) != 0) throw std::runtime_error("cannot lock " + path);
  }
  ~FileLock() { ::close(fd_); }
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

 private:
  int fd_;
};

}  // namespace

std::string shared_dir(const std::string& name, const std::function<void(const std::string& dir)>& make) {
  const std::string root = ZIBERT_BUILD_DIR "/test-cache";
  std::filesystem::create_directories(root);
  const std::string dir = root + "/" + name;
  const std::string stamp = file_stamp(ZIBERT_BIN) + file_stamp("/proc/self/exe");
  FileLock lock(dir + ".lock");
  if (read_text(dir + "/.made-by") == stamp) return dir;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  make(dir);
  write_text(dir + "/.made-by", stamp);
  return dir;
}

std::string rebuild_file(const std::string& bytes, const std::function<void(EditedFile&)>& edit) {
  const SafeTensors file = decode_safetensors(bytes, "test");
  EditedFile e{file.metadata, {}};
  for (const auto& [name, t] : file.tensors)
    e.tensors[name] = {t.shape, t.dtype, std::string(t.bytes, t.count * dtype_size(t.dtype))};
  edit(e);
  std::vector<TensorRef> refs;
  for (const auto& [name, t] : e.tensors) refs.push_back({name, t.shape, t.bytes.data(), t.dtype});
  return encode_safetensors(e.metadata, refs);
}

std::string write_demo_texts(const std::string& dir) {
  const std::string texts = dir + "/demo.txt";
  REQUIRE(run_shell("tail -n +2 " ZIBERT_SOURCE_DIR "/data/demo.tsv | cut -f2 > " + texts).status == 0);
  return texts;
}

std::string classify_same_labels(const std::string& a, const std::string& b, const std::string& texts) {
  const RunResult ra = run_zibert("classify -m " + a + " " + texts), rb = run_zibert("classify -m " + b + " " + texts);
  REQUIRE(ra.status == 0);
  REQUIRE(rb.status == 0);
  const std::vector<std::string> la = lines_of(ra.out), lb = lines_of(rb.out);
  REQUIRE(la.size() == lb.size());
  for (std::size_t i = 0; i < la.size(); ++i) CHECK(la[i].substr(0, la[i].find('\t')) == lb[i].substr(0, lb[i].find('\t')));
  return rb.out;
}

std::string decode_error(const std::string& bytes) {
  try {
    decode_model(bytes, "bad.safetensors");
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

void write_with_metadata(const std::string& from, const std::string& to, const std::string& key,
                         const std::string& value) {
  write_text(to, rebuild_file(read_text(from), [&](EditedFile& e) { e.metadata[key] = value; }));
}

void write_text(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  if (!out) throw std::runtime_error("cannot write " + path);
}

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) out.push_back(line);
  return out;
}

void interrupt_and_resume(const std::string& args, const std::string& checkpoint, int step,
                          const std::string& command) {
  RunResult stopped = run_zibert(command + " " + args + " --checkpoint " + checkpoint + " --interrupt-at-step " +
                                 std::to_string(step));
  CHECK(stopped.status != 0);
  RunResult resumed = run_zibert(command + " -q --resume " + checkpoint);
  INFO(resumed.err);
  REQUIRE(resumed.status == 0);
}

RunResult run_shell(const std::string& command) {
  std::string dir = temp_dir();
  std::string full = "( " + command + " ) > " + dir + "/out 2> " + dir + "/err";
  int raw = std::system(full.c_str());
  RunResult r;
  r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : 128 + WTERMSIG(raw);
  r.out = read_text(dir + "/out");
  r.err = read_text(dir + "/err");
  std::system(("rm -rf " + dir).c_str());
  return r;
}

RunResult run_zibert(const std::string& args) {
  return run_shell(std::string(ZIBERT_BIN) + " " + args + " < /dev/null");
}

}  // namespace zibert::test
