// Hostile Hugging Face checkpoints: the pickle machine that reads
// pytorch_model.bin refuses everything but a state dict, and zibert import
// answers every damaged or hostile directory with exit 2, one line naming the
// file, and no output file.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <functional>

#include "helpers.hpp"
#include "zibert/base/error.hpp"
#include "zibert/model/torch_checkpoint.hpp"

using namespace zibert;
using namespace zibert::test;
using namespace std::string_literals;

namespace {

// The checkpoint fixtures (tests/data/hf, written by tests/reference/make_hf_checkpoints.py).
const std::string kHfDir = std::string(ZIBERT_TEST_DATA) + "/hf";

}  // namespace

namespace {

namespace fs = std::filesystem;

void put16(std::string& s, std::uint32_t v) { s += char(v & 0xff), s += char((v >> 8) & 0xff); }
void put32(std::string& s, std::uint32_t v) { put16(s, v & 0xffff), put16(s, v >> 16); }

// A zip archive of stored entries, as torch.save writes one.
std::string zip_of(const std::vector<std::pair<std::string, std::string>>& entries) {
  std::string out, dir;
  for (const auto& [name, data] : entries) {
    const auto offset = static_cast<std::uint32_t>(out.size());
    put32(out, 0x04034b50), put16(out, 20), put16(out, 0), put16(out, 0), put32(out, 0), put32(out, 0);
    put32(out, static_cast<std::uint32_t>(data.size())), put32(out, static_cast<std::uint32_t>(data.size()));
    put16(out, static_cast<std::uint32_t>(name.size())), put16(out, 0);
    out += name + data;
    put32(dir, 0x02014b50), put16(dir, 20), put16(dir, 20), put16(dir, 0), put16(dir, 0), put32(dir, 0), put32(dir, 0);
    put32(dir, static_cast<std::uint32_t>(data.size())), put32(dir, static_cast<std::uint32_t>(data.size()));
    put16(dir, static_cast<std::uint32_t>(name.size())), put16(dir, 0), put16(dir, 0), put16(dir, 0), put16(dir, 0);
    put32(dir, 0), put32(dir, offset);
    dir += name;
  }
  const auto dir_offset = static_cast<std::uint32_t>(out.size());
  out += dir;
  put32(out, 0x06054b50), put16(out, 0), put16(out, 0), put16(out, static_cast<std::uint32_t>(entries.size()));
  put16(out, static_cast<std::uint32_t>(entries.size())), put32(out, static_cast<std::uint32_t>(dir.size()));
  put32(out, dir_offset), put16(out, 0);
  return out;
}

// What read_torch_state_dict says of a torch archive holding pickle (and storage "0": 4 floats).
std::string pickle_error(const std::string& pickle) {
  const std::string bytes = zip_of({{"archive/data.pkl", pickle}, {"archive/data/0", std::string(16, '\0')}});
  try {
    read_torch_state_dict(bytes, "w.bin");
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

// {"w": a tensor of storage key, size and stride} as torch.save pickles a state dict.
std::string state_dict_pickle(const std::string& key, int size, int stride) {
  std::string p = "\x80\x02}q\x00X\x01\x00\x00\x00wq\x01"s + "ctorch._utils\n_rebuild_tensor_v2\nq\x02((" +
                  "X\x07\x00\x00\x00storageq\x03"s + "ctorch\nFloatStorage\nq\x04" + "X";
  put32(p, static_cast<std::uint32_t>(key.size()));
  p += key + "X\x03\x00\x00\x00"s + "cpuK\x04" + "tQK\x00"s + "K";
  p += char(size);
  p += "\x85K";
  p += char(stride);
  p += "\x85\x89"s + "ccollections\nOrderedDict\n)RtRs.";
  return p;
}

// A copy of fixture `name` in a fresh directory, edited; its path.
std::string edited_fixture(const std::string& name, const std::function<void(const std::string&)>& edit) {
  const std::string dir = temp_dir() + "/ckpt";
  fs::copy(kHfDir + "/" + name, dir, fs::copy_options::recursive);
  edit(dir);
  return dir;
}

// Under a 2 GB address-space limit (not under the sanitizers, whose shadow memory needs more), so that a
// config's absurd sizes cannot be allocated before they are refused.
#ifdef ZIBERT_SANITIZED
const char* const kLimit = "";
#else
const char* const kLimit = "ulimit -v 2000000; ";
#endif

void check_refused(const std::string& dir, const std::string& message, const std::string& prefix = kLimit) {
  const std::string out = temp_dir() + "/out.safetensors";
  const RunResult r = run_shell(prefix + ZIBERT_BIN + " import " + dir + " --out " + out + " < /dev/null");
  INFO(r.err);
  CHECK(r.status == 2);
  CHECK(r.err.find(message) != std::string::npos);
  CHECK(lines_of(r.err).size() == 1);
  CHECK_FALSE(fs::exists(out));
}

}  // namespace

TEST_CASE("the pickle machine reads a state dict and refuses everything else", "[hf][hostile]") {
  CHECK(pickle_error(state_dict_pickle("0", 4, 1)) == "(no error)");
  const std::string bytes = zip_of({{"any/data.pkl", state_dict_pickle("0", 2, 2)}, {"any/data/0", std::string(16, '\0')}});
  const auto sd = read_torch_state_dict(bytes, "w.bin");
  REQUIRE(sd.size() == 1);
  CHECK(sd[0].first == "w");
  CHECK(sd[0].second.shape == std::vector<std::int64_t>{2});
  CHECK(sd[0].second.strides == std::vector<std::int64_t>{2});
  CHECK(pickle_error("\x80\x02\x63os\nsystem\nX\x02\x00\x00\x00ls\x85R."s) ==
        "w.bin: not a state dict zibert can read: global os.system is forbidden: zibert reads state dicts of tensors "
        "only, as torch.load(weights_only=True) does (data.pkl byte 13)");
  CHECK_THAT(pickle_error("\x80\x02\x63\x62uiltins\neval\n."), Catch::Contains("global builtins.eval is forbidden"));
  CHECK_THAT(pickle_error("\x80\x02]q\x00h\x00\x61."s), Catch::Contains("holds no dict of tensors"));  // a list holding itself
  CHECK_THAT(pickle_error("\x80\x02(" + std::string(1'000'001, 'N') + "."), Catch::Contains("more than a million objects"));
  CHECK_THAT(pickle_error(state_dict_pickle("7", 4, 1)), Catch::Contains("storage 7 is not in the archive"));
  CHECK_THAT(pickle_error(state_dict_pickle("0", 5, 1)), Catch::Contains("past the end of its storage"));
  CHECK_THAT(pickle_error(state_dict_pickle("0", 3, 2)), Catch::Contains("past the end of its storage"));
  CHECK_THAT(pickle_error("\x80\x02}q\x00."s), Catch::Contains("(no error)"));
  CHECK_THAT(pickle_error("\x80\x02}"), Catch::Contains("the pickle ends early"));
  CHECK_THAT(pickle_error("\x80\x02s."), Catch::Contains("stack is empty"));
  CHECK_THAT(pickle_error("\x80\x02h\x05."), Catch::Contains("memo entry 5 was never stored"));
  CHECK_THAT(pickle_error("\x80\x02\x81."), Catch::Contains("opcode 0x81 is not one a state dict needs"));
  try {
    read_torch_state_dict(std::string("\x80\x02\x8a\x0a", 4) + std::string(20, '\0'), "old.bin");
    FAIL("no error");
  } catch (const Error& e) {
    CHECK_THAT(e.what(), Catch::Contains("the legacy format of torch < 1.6"));
  }
  // Damaged archives: a cut, and an entry said to lie past the end.
  const std::string good = zip_of({{"a/data.pkl", "\x80\x02}."}});
  for (std::size_t cut : {good.size() - 1, good.size() / 2, std::size_t(10)}) {
    INFO(cut);
    CHECK_THROWS_AS(read_torch_state_dict(good.substr(0, cut), "cut.bin"), Error);
  }
  // Every truncation and every flipped byte of a real archive is an Error, never a crash.
  std::ifstream in(kHfDir + "/pretraining-bin/pytorch_model.bin", std::ios::binary);
  const std::string real((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  Rng rng(3);
  for (int i = 0; i < 2000; ++i) {
    std::string b = real;
    const auto at = static_cast<std::size_t>(rng.uniform() * double(b.size()));
    if (i % 2) b[at] = static_cast<char>(static_cast<unsigned char>(rng.uniform() * 256));
    else b.resize(at);
    try {
      read_torch_state_dict(b, "fuzz.bin");
    } catch (const Error&) {
    }
  }
}

TEST_CASE("hostile checkpoint directories: exit 2, one line naming the file, no output", "[hf][hostile][cli]") {
  auto write = [](const std::string& path, const std::string& text) { write_text(path, text); };
  auto config_with = [&](const std::string& name, const std::function<void(nlohmann::json&)>& edit) {
    return edited_fixture(name, [&](const std::string& d) {
      std::ifstream in(d + "/config.json");
      nlohmann::json c = nlohmann::json::parse(in);
      edit(c);
      write(d + "/config.json", c.dump());
    });
  };
  SECTION("a pickle with a forbidden global") {
    check_refused(edited_fixture("pretraining-bin", [&](const std::string& d) {
                    write(d + "/pytorch_model.bin", zip_of({{"archive/data.pkl", "\x80\x02\x63os\nsystem\nX\x02\x00\x00\x00ls\x85R."s}}));
                  }),
                  "pytorch_model.bin: not a state dict zibert can read: global os.system is forbidden");
  }
  SECTION("shapes that do not match the config") {
    check_refused(config_with("cls-safetensors", [](nlohmann::json& c) { c["intermediate_size"] = 48; }),
                  "model.safetensors: tensor bert.encoder.layer.0.intermediate.dense.weight has shape [40,16], config.json needs [48,16]");
  }
  SECTION("a config of absurd sizes, refused before allocating them") {
    check_refused(config_with("cls-safetensors", [](nlohmann::json& c) {
                    c["hidden_size"] = 16384, c["intermediate_size"] = 65536, c["num_hidden_layers"] = 200;
                  }),
                  "config.json: invalid model config: more than 4e9 parameters");
    check_refused(config_with("cls-safetensors", [](nlohmann::json& c) {
                    c["hidden_size"] = 4096, c["num_attention_heads"] = 64, c["intermediate_size"] = 16384, c["num_hidden_layers"] = 12;  // 2.4e9 parameters, 9.6 GB
                  }),
                  "has shape [37,16], config.json needs [37,4096]");
    check_refused(config_with("cls-safetensors", [](nlohmann::json& c) { c["vocab_size"] = -5; }),
                  "config.json: \"vocab_size\" is -5, outside 6..10000000");
  }
  SECTION("what zibert cannot compute exactly is named") {
    check_refused(config_with("cls-safetensors", [](nlohmann::json& c) { c["hidden_act"] = "relu"; }),
                  "config.json: hidden_act \"relu\"");
    check_refused(config_with("cls-safetensors", [](nlohmann::json& c) { c["model_type"] = "albert"; }),
                  "config.json: model_type \"albert\" is not BERT's");
    check_refused(config_with("cls-safetensors", [](nlohmann::json& c) { c["position_embedding_type"] = "relative_key"; }),
                  "position_embedding_type \"relative_key\"");
    check_refused(config_with("cls-safetensors", [](nlohmann::json& c) { c["use_task_id"] = true; }),
                  "ERNIE's task embeddings");
    check_refused(config_with("cls-safetensors", [](nlohmann::json& c) { c["architectures"] = {"BertForTokenClassification"}; }),
                  "a BertForTokenClassification checkpoint");
  }
  SECTION("bad vocab.txt") {
    check_refused(edited_fixture("cls-safetensors", [&](const std::string& d) {
                    std::string v = read_text(d + "/vocab.txt");
                    write(d + "/vocab.txt", v.substr(0, v.rfind('\n', v.size() - 2) + 1) + "[CLS]\n");
                  }),
                  "vocab.txt: token 36 \"[CLS]\" repeats token 3");
    check_refused(edited_fixture("cls-safetensors", [&](const std::string& d) {
                    std::string v = read_text(d + "/vocab.txt");
                    write(d + "/vocab.txt", v.substr(0, v.rfind('\n', v.size() - 2) + 1) + "\n");
                  }),
                  "vocab.txt:37: an empty line where a token belongs");
    check_refused(edited_fixture("cls-safetensors", [&](const std::string& d) {
                    std::string v = read_text(d + "/vocab.txt");
                    write(d + "/vocab.txt", v.substr(0, v.rfind('\n', v.size() - 2) + 1) + "\xff\xfe\n");
                  }),
                  "vocab.txt:37: invalid UTF-8");
    check_refused(edited_fixture("cls-safetensors", [&](const std::string& d) {
                    std::string v;
                    for (int i = 0; i < 2'000'000; ++i) v += "t" + std::to_string(i) + "\n";
                    write(d + "/vocab.txt", v);
                  }),
                  "vocab.txt: 2000000 tokens, but config.json's vocab_size is 37");
  }
  SECTION("missing files") {
    check_refused(edited_fixture("cls-safetensors", [](const std::string& d) { fs::remove(d + "/config.json"); }),
                  "config.json: missing");
    check_refused(edited_fixture("cls-safetensors", [](const std::string& d) { fs::remove(d + "/vocab.txt"); }),
                  "vocab.txt: missing");
    check_refused(edited_fixture("cls-safetensors", [](const std::string& d) { fs::remove(d + "/model.safetensors"); }),
                  "no weights (model.safetensors or pytorch_model.bin");
    check_refused(edited_fixture("mlm-untied-bf16", [](const std::string& d) { fs::remove(d + "/model-00002-of-00002.safetensors"); }),
                  "model-00002-of-00002.safetensors: missing (the index names it)");
    check_refused(temp_dir() + "/nothing", "nothing: not a directory");
  }
  SECTION("a shard name that leaves the directory") {
    check_refused(edited_fixture("mlm-untied-bf16", [&](const std::string& d) {
                    write(d + "/model.safetensors.index.json", R"({"weight_map": {"a": "../../etc/passwd"}})");
                  }),
                  "is not a file of the directory");
  }
}
