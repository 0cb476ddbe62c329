// The safetensors model file: round trip, and a reader that trusts nothing.
#include <catch2/catch.hpp>
#include <cstring>
#include <functional>
#include <nlohmann/json.hpp>

#include "helpers.hpp"
#include "zibert/predictor.hpp"
#include "zibert/safetensors.hpp"

using namespace zibert;
using namespace zibert::test;

namespace {

// Rewrites a model file's JSON header with edit(), keeping the data bytes.
std::string edit_header(const std::string& bytes, const std::function<void(nlohmann::json&)>& edit) {
  std::uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);
  nlohmann::json header = nlohmann::json::parse(bytes.substr(8, n));
  edit(header);
  std::string json = header.dump();
  std::string out(8, '\0');
  std::uint64_t m = json.size();
  std::memcpy(out.data(), &m, 8);
  return out + json + bytes.substr(8 + n);
}

std::vector<float> logits_of(const Classifier& model, const std::string& text) {
  Predictor p(model);
  return p.predict({normalize(text, Normalization{})})[0].probs;
}

}  // namespace

TEST_CASE("save and load give identical weights and predictions", "[model_file]") {
  Classifier model = tiny_classifier(7);
  std::string dir = temp_dir();
  save_model(dir + "/m.safetensors", model);
  Classifier back = load_model(dir + "/m.safetensors");
  CHECK(back.net.params() == model.net.params());
  CHECK(back.labels == model.labels);
  CHECK(back.positive == "1");
  CHECK(back.tokenizer.vocab().tokens() == model.tokenizer.vocab().tokens());
  CHECK(back.training["note"] == "test");
  CHECK(logits_of(back, "他们点了一坛佛跳墙") == logits_of(model, "他们点了一坛佛跳墙"));
  CHECK(encode_model(back) == encode_model(model));  // bytes are deterministic
}

TEST_CASE("the file is safetensors with Hugging Face names", "[model_file]") {
  std::string bytes = encode_model(tiny_classifier());
  std::uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);
  CHECK((8 + n) % 8 == 0);
  nlohmann::json header = nlohmann::json::parse(bytes.substr(8, n));
  CHECK(header["__metadata__"]["format"] == "zibert");
  CHECK(header["bert.embeddings.word_embeddings.weight"]["dtype"] == "F32");
  CHECK(header.contains("bert.encoder.layer.1.attention.self.query.weight"));
  CHECK(header.contains("bert.pooler.dense.weight"));
  CHECK(header["classifier.weight"]["shape"] == nlohmann::json({2, 8}));
}

TEST_CASE("damaged model files are clear errors", "[model_file]") {
  const std::string good = encode_model(tiny_classifier());
  struct Case {
    const char* what;
    std::function<std::string()> make;
    const char* message;
  };
  auto c = GENERATE_COPY(values<Case>({
      {"truncated file", [good] { return good.substr(0, good.size() / 2); }, "past the end of the file"},
      {"shorter than the header length", [good] { return good.substr(0, 5); }, "truncated"},
      {"absurd header length",
       [good] {
         std::string b = good;
         std::uint64_t huge = 1ULL << 63;
         std::memcpy(b.data(), &huge, 8);
         return b;
       },
       "exceeds the file size"},
      {"offset past the end",
       [good] {
         return edit_header(good, [](nlohmann::json& h) {
           h["classifier.bias"]["data_offsets"] = {1u << 30, (1u << 30) + 8};
         });
       },
       "past the end"},
      {"overlapping offsets",
       [good] {
         return edit_header(good, [](nlohmann::json& h) {
           h["classifier.bias"]["data_offsets"] = h["bert.pooler.dense.bias"]["data_offsets"];
           h["classifier.bias"]["data_offsets"][1] = h["classifier.bias"]["data_offsets"][0].get<std::uint64_t>() + 8;
         });
       },
       "overlap"},
      {"wrong shape",
       [good] {
         return edit_header(good, [](nlohmann::json& h) { h["classifier.bias"]["shape"] = {1, 2}; });
       },
       "has shape [1,2]"},
      {"missing tensor",
       [good] { return edit_header(good, [](nlohmann::json& h) { h.erase("bert.pooler.dense.bias"); }); },
       "tensor bert.pooler.dense.bias is missing"},
      {"non-JSON metadata",
       [good] { return edit_header(good, [](nlohmann::json& h) { h["__metadata__"]["config"] = "{not json"; }); },
       "metadata \"config\" is not JSON"},
      {"header not JSON",
       [good] {
         std::string b = good;
         b[8] = '#';
         return b;
       },
       "header is not JSON"},
      {"dtype F16",
       [good] { return edit_header(good, [](nlohmann::json& h) { h["classifier.bias"]["dtype"] = "F16"; }); },
       "dtype F16"},
      {"not a zibert model",
       [good] { return edit_header(good, [](nlohmann::json& h) { h["__metadata__"]["format"] = "pt"; }); },
       "format is \"pt\""},
      {"vocab disagrees with the config",
       [good] {
         return edit_header(good, [](nlohmann::json& h) { h["__metadata__"]["vocab"] = "[\"[PAD]\"]"; });
       },
       "vocab has 1 entries"},
  }));
  INFO(c.what);
  std::string bytes = c.make();
  CHECK_THROWS_WITH(decode_model(bytes, "bad.safetensors"),
                    Catch::StartsWith("bad.safetensors: ") && Catch::Contains(c.message));

  // The CLI reports it as one error line with exit status 2.
  std::string dir = temp_dir();
  write_text(dir + "/bad.safetensors", bytes);
  RunResult r = run_zibert("info -m " + dir + "/bad.safetensors");
  CHECK(r.status == 2);
  CHECK(r.out.empty());
  CHECK_THAT(r.err, Catch::StartsWith("zibert: error: " + dir + "/bad.safetensors: ") && Catch::Contains(c.message));
}

TEST_CASE("NaN weights are rejected", "[model_file]") {
  Classifier model = tiny_classifier();
  model.net.params()[3] = std::nanf("");
  CHECK_THROWS_WITH(decode_model(encode_model(model), "nan.safetensors"), Catch::Contains("NaN"));
}
