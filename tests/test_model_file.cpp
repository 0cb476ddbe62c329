// The safetensors model file: round trip, and a reader that trusts nothing.
#include <catch2/catch.hpp>
#include <cstring>
#include <functional>
#include <nlohmann/json.hpp>

#include "helpers.hpp"
#include "zibert/nn/gemm.hpp"
#include "zibert/infer/predictor.hpp"
#include "zibert/model/batch.hpp"
#include "zibert/model/safetensors.hpp"

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

std::vector<float> logits_of(const Model& model, const std::string& text) {
  Predictor p(model);
  return p.predict({normalize(text, Normalization{})})[0].probs;
}

}  // namespace

TEST_CASE("save and load give identical weights and predictions", "[model_file]") {
  Model model = tiny_classifier(7);
  std::string dir = temp_dir();
  save_model(dir + "/m.safetensors", model);
  Model back = load_model(dir + "/m.safetensors");
  CHECK(back.net.params() == model.net.params());
  CHECK(back.classifier.labels == model.classifier.labels);
  CHECK(back.classifier.positive == "1");
  CHECK(back.tokenizer.vocab().tokens() == model.tokenizer.vocab().tokens());
  CHECK(back.training["note"] == "test");
  CHECK(logits_of(back, "他们点了一坛佛跳墙") == logits_of(model, "他们点了一坛佛跳墙"));
  CHECK(encode_model(back) == encode_model(model));  // bytes are deterministic
}

TEST_CASE("files are written from the arrays in place, with the bytes encode makes", "[model_file]") {
  Model model = tiny_classifier(7);
  const std::string dir = temp_dir();
  save_model(dir + "/m.safetensors", model);
  CHECK(read_text(dir + "/m.safetensors") == encode_model(model));
  // A checkpoint from a training run's own arrays: the bytes encode_checkpoint makes of the same state.
  const std::size_t n = model.net.params().size();
  std::vector<float> m(n, 0.25f), v(n, 0.5f), best(model.net.params().begin(), model.net.params().end());
  best[3] += 1.0f;
  const nlohmann::json training = {{"checkpoint", {{"step", 4}}}};
  save_checkpoint(dir + "/run.ckpt", model, training, m, v, best);
  Checkpoint c{model, m, v, best};
  c.model.training = training;
  CHECK(read_text(dir + "/run.ckpt") == encode_checkpoint(c));
  const Checkpoint back = load_checkpoint(dir + "/run.ckpt");
  CHECK(back.best == best);
  CHECK(back.adam_v == v);
  CHECK(back.state()["step"] == 4);
  CHECK(model.training["note"] == "test");  // the model's own record is untouched
  std::vector<float> short_state(n - 1, 0.0f);
  CHECK_THROWS_WITH(save_checkpoint(dir + "/bad.ckpt", model, training, short_state, v, best),
                    Catch::Contains("does not match"));
}

TEST_CASE("a predictor gathers the first projections from tables, whatever came before", "[model_file][predictor]") {
  Model model = tiny_classifier(7);
  for (float& w : model.net.params()) w *= 25.0f;  // weights with std 0.5: predictions far from uniform
  std::vector<std::vector<char32_t>> texts;
  for (const char* t : {"他们点了一坛佛跳墙", "佛 跳 墙", "今天天气很好", ""}) texts.push_back(normalize(t, Normalization{}));
  Predictor plain(model, 0.5, /*tables=*/false), tabulated(model);
  CHECK_FALSE(plain.tabulated());
  REQUIRE(tabulated.tabulated());
  const std::vector<Prediction> a = plain.predict(texts), b = tabulated.predict(texts);
  for (std::size_t i = 0; i < texts.size(); ++i) {
    CHECK(a[i].label == b[i].label);
    for (std::size_t c = 0; c < a[i].probs.size(); ++c) CHECK(b[i].probs[c] == Approx(a[i].probs[c]).margin(1e-6));
  }
  // The tables fill as tokens first appear; a text predicted after others,
  // alone, by a fresh predictor, gets the same bits with the native product
  // (Eigen's sums a row in an order that depends on the batch's size).
  Predictor fresh(model);
  for (std::size_t i = texts.size(); i-- > 0;) {
    const std::vector<float> alone = fresh.predict({texts[i]})[0].probs;
    if (gemm_is_native())
      CHECK(alone == b[i].probs);
    else
      for (std::size_t c = 0; c < alone.size(); ++c) CHECK(alone[c] == Approx(b[i].probs[c]).margin(1e-6));
  }
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

TEST_CASE("damaged model files are clear errors, classifiers and encoders alike", "[model_file]") {
  // Every check holds for an encoder (zibert pretrain's) as for a classifier;
  // the head's tensors are the ones each has.
  const bool encoder = GENERATE(false, true);
  const std::function<Model()> make_model = [encoder] { return encoder ? tiny_encoder() : tiny_classifier(); };
  const std::string good = encode_model(make_model());
  // A small head tensor (2 labels, or C = 8 wide) and another.
  const std::string head_bias = encoder ? "cls.predictions.transform.dense.bias" : "classifier.bias";
  const std::string other_bias = encoder ? "cls.predictions.transform.LayerNorm.bias" : "bert.pooler.dense.bias";
  const std::uint64_t head_bytes = encoder ? 32 : 8;
  const std::string wrong_shape = encoder ? "has shape [1,8]" : "has shape [1,2]";
  struct Case {
    const char* what;
    std::function<std::string()> make;
    std::string message;
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
       [good, head_bias] {
         return edit_header(good, [&](nlohmann::json& h) {
           h[head_bias]["data_offsets"] = {1u << 30, (1u << 30) + 8};
         });
       },
       "past the end"},
      {"overlapping offsets",
       [good, head_bias, other_bias, head_bytes] {
         return edit_header(good, [&](nlohmann::json& h) {
           h[head_bias]["data_offsets"] = h[other_bias]["data_offsets"];
           h[head_bias]["data_offsets"][1] = h[head_bias]["data_offsets"][0].get<std::uint64_t>() + head_bytes;
         });
       },
       "overlap"},
      {"wrong shape",
       [good, head_bias, encoder] {
         return edit_header(good, [&](nlohmann::json& h) { h[head_bias]["shape"] = {1, encoder ? 8 : 2}; });
       },
       wrong_shape},
      {"missing tensor",
       [good, other_bias] { return edit_header(good, [&](nlohmann::json& h) { h.erase(other_bias); }); },
       "is missing"},
      {"non-JSON metadata",
       [good] { return edit_header(good, [](nlohmann::json& h) { h["__metadata__"]["config"] = "{not json"; }); },
       "metadata \"config\" is not JSON"},
      {"unknown windows",
       [good] { return edit_header(good, [](nlohmann::json& h) { h["__metadata__"]["windows"] = "all"; }); },
       "windows must be max, mean or first"},
      {"windows max without a positive label",
       [good] {
         return edit_header(good, [](nlohmann::json& h) {
           h["__metadata__"]["windows"] = "max";
           h["__metadata__"]["positive_label"] = "";
         });
       },
       "needs a binary model with a positive label"},
      {"unknown problem_type",
       [good] {
         return edit_header(good, [](nlohmann::json& h) {
           auto config = nlohmann::json::parse(h["__metadata__"]["config"].get<std::string>());
           config["problem_type"] = "regression";
           h["__metadata__"]["config"] = config.dump();
         });
       },
       "unknown problem_type \"regression\""},
      {"multi-label with a positive label (a classifier) or no labels (an encoder)",
       [good] {
         return edit_header(good, [](nlohmann::json& h) {
           auto config = nlohmann::json::parse(h["__metadata__"]["config"].get<std::string>());
           config["problem_type"] = "multi_label_classification";
           h["__metadata__"]["config"] = config.dump();
         });
       },
       encoder ? "has no labels to be multi-label" : "a multi-label model has no positive label"},
      {"header not JSON",
       [good] {
         std::string b = good;
         b[8] = '#';
         return b;
       },
       "header is not JSON"},
      {"dtype F64",
       [good, head_bias] { return edit_header(good, [&](nlohmann::json& h) { h[head_bias]["dtype"] = "F64"; }); },
       "dtype F64; zibert reads F32, F16, BF16, I8 and I64"},
      {"dtype BF16 over an F32 tensor's bytes",
       [good, head_bias] { return edit_header(good, [&](nlohmann::json& h) { h[head_bias]["dtype"] = "BF16"; }); },
       "bytes but its shape needs"},
      {"dtype F16 over an F32 tensor's bytes",
       [good, head_bias] { return edit_header(good, [&](nlohmann::json& h) { h[head_bias]["dtype"] = "F16"; }); },
       "bytes but its shape needs"},
      {"not a zibert model",
       [good] { return edit_header(good, [](nlohmann::json& h) { h["__metadata__"]["format"] = "pt"; }); },
       "format is \"pt\""},
      {"header length 2^64 - 1",
       [good] {
         std::string b = good;
         std::uint64_t huge = ~0ULL;
         std::memcpy(b.data(), &huge, 8);
         return b;
       },
       "exceeds the file size"},
      {"deeply nested header JSON",
       [] {
         std::string json = "{\"a\":" + std::string(200000, '[') + std::string(200000, ']') + "}";
         std::string b(8, '\0');
         std::uint64_t n = json.size();
         std::memcpy(b.data(), &n, 8);
         return b + json;
       },
       "nested more than 32 deep"},
      {"deeply nested metadata JSON",
       [good] {
         return edit_header(good, [](nlohmann::json& h) {
           h["__metadata__"]["training"] = std::string(100000, '[') + std::string(100000, ']');
         });
       },
       "metadata \"training\" is JSON nested"},
      {"a shape whose product overflows",
       [good, head_bias] {
         return edit_header(good, [&](nlohmann::json& h) {
           h[head_bias]["shape"] = {1ULL << 40, 1ULL << 40, 1ULL << 40};
         });
       },
       "shape too large"},
      {"negative offsets",
       [good, head_bias] {
         return edit_header(good, [&](nlohmann::json& h) { h[head_bias]["data_offsets"] = {-8, 0}; });
       },
       "not non-negative integers"},
      {"a huge config in a small file",
       [good] {
         return edit_header(good, [](nlohmann::json& h) {
           auto config = nlohmann::json::parse(h["__metadata__"]["config"].get<std::string>());
           config["dim"] = 16384;  // 3.2e9 parameters: 13 GB if it were allocated
           config["heads"] = 1;
           config["layers"] = 3;
           config["ffn"] = 16;
           h["__metadata__"]["config"] = config.dump();
         });
       },
       "the config needs ["},
      {"vocab disagrees with the embedding rows",
       [good] {
         return edit_header(good, [](nlohmann::json& h) {
           auto config = nlohmann::json::parse(h["__metadata__"]["config"].get<std::string>());
           auto vocab = nlohmann::json::parse(h["__metadata__"]["vocab"].get<std::string>());
           vocab.push_back("龘");
           config["vocab_size"] = vocab.size();
           h["__metadata__"]["config"] = config.dump();
           h["__metadata__"]["vocab"] = vocab.dump();
         });
       },
       "word_embeddings.weight has shape"},
      {"NaN weights",
       [make_model] {
         Model model = make_model();
         model.net.params()[3] = std::nanf("");
         return encode_model(model);
       },
       "NaN"},
      {"an unknown task",
       [good] {
         return edit_header(good, [](nlohmann::json& h) {
           auto config = nlohmann::json::parse(h["__metadata__"]["config"].get<std::string>());
           config["task"] = "translate";
           h["__metadata__"]["config"] = config.dump();
         });
       },
       "unknown task \"translate\""},
      {"the other task's config over these tensors",
       [good, encoder] {
         return edit_header(good, [&](nlohmann::json& h) {
           auto config = nlohmann::json::parse(h["__metadata__"]["config"].get<std::string>());
           config["task"] = encoder ? "classify" : "mlm";
           config["labels"] = encoder ? 2 : 0;
           h["__metadata__"]["config"] = config.dump();
           h["__metadata__"]["labels"] = encoder ? "[\"0\",\"1\"]" : "[]";
           h["__metadata__"]["positive_label"] = "";
         });
       },
       "is missing"},
      {"labels in an encoder",
       [good] {
         return edit_header(good, [](nlohmann::json& h) {
           auto config = nlohmann::json::parse(h["__metadata__"]["config"].get<std::string>());
           config["task"] = "mlm";
           config["labels"] = 2;
           h["__metadata__"]["config"] = config.dump();
         });
       },
       "labels"},
      {"vocab disagrees with the config",
       [good] {
         return edit_header(good, [](nlohmann::json& h) { h["__metadata__"]["vocab"] = "[\"[PAD]\"]"; });
       },
       "vocab has 1 entries"},
  }));
  INFO(c.what << (encoder ? " (encoder)" : " (classifier)"));
  std::string bytes = c.make();
  CHECK_THROWS_WITH(decode_model(bytes, "bad.safetensors"),
                    Catch::StartsWith("bad.safetensors: ") && Catch::Contains(c.message));

  // The CLI reports it as one error line with exit status 2.
  std::string dir = temp_dir();
  write_text(dir + "/bad.safetensors", bytes);
  // Under a 4 GB address-space limit: reading no hostile file may allocate
  // gigabytes (sanitizer builds reserve terabytes of address space, so they
  // run without the limit).
#ifdef ZIBERT_SANITIZED
  const std::string limit;
#else
  const std::string limit = "ulimit -v 4000000; ";
#endif
  RunResult r = run_shell(limit + "timeout 60 " + ZIBERT_BIN + " info -m " + dir + "/bad.safetensors < /dev/null");
  CHECK(r.status == 2);
  CHECK(r.out.empty());
  CHECK_THAT(r.err, Catch::StartsWith("zibert: error: " + dir + "/bad.safetensors: ") && Catch::Contains(c.message));
}

TEST_CASE("NaN weights are rejected", "[model_file]") {
  Model model = tiny_classifier();
  model.net.params()[3] = std::nanf("");
  CHECK_THROWS_WITH(decode_model(encode_model(model), "nan.safetensors"), Catch::Contains("NaN"));
}

TEST_CASE("a long text's windows combine as the model records: max, mean or first", "[model_file][predictor]") {
  Model model = tiny_classifier(9);
  for (float& w : model.net.params()) w *= 25.0f;  // predictions far from uniform
  const std::int64_t width = model.config.max_len - 2;
  std::vector<std::int32_t> ids = model.tokenizer.encode("他们点了一坛佛跳墙，说是镇店之宝。狗急跳墙，他终于说出了实话。年夜饭的压轴菜");
  REQUIRE(static_cast<std::int64_t>(ids.size()) > 2 * width);
  const std::vector<std::int64_t> starts = window_starts(static_cast<std::int64_t>(ids.size()), width);
  REQUIRE(starts.size() >= 3);
  // Each window alone, as a text of its own.
  std::vector<std::vector<float>> alone;
  for (std::int64_t s : starts) {
    Predictor p(model);
    const std::int64_t end = std::min<std::int64_t>(s + width, static_cast<std::int64_t>(ids.size()));
    alone.push_back(p.predict_ids({std::vector<std::int32_t>(ids.begin() + s, ids.begin() + end)})[0].probs);
  }
  const std::int32_t pos = model.classifier.positive_id();
  auto whole = [&](Windows w) {
    model.classifier.windows = w;
    Predictor p(model);
    return p.predict_ids({ids})[0];
  };
  const Prediction first = whole(Windows::first), mean = whole(Windows::mean), max = whole(Windows::max);
  // Equal bits with the native product (a row does not depend on its batch), to rounding with Eigen's.
  auto same = [](const std::vector<float>& a, const std::vector<float>& b) {
    if (gemm_is_native()) return a == b;
    for (std::size_t c = 0; c < a.size(); ++c)
      if (std::abs(a[c] - b[c]) > 1e-6f) return false;
    return true;
  };
  CHECK(same(first.probs, alone[0]));
  CHECK(first.offset == 0);
  std::size_t best = 0;
  for (std::size_t w = 0; w < alone.size(); ++w)
    if (alone[w][pos] > alone[best][pos]) best = w;
  CHECK(same(max.probs, alone[best]));
  CHECK(max.offset == starts[best]);
  for (std::size_t c = 0; c < mean.probs.size(); ++c) {
    float sum = 0;
    for (const auto& a : alone) sum += a[c];
    CHECK(mean.probs[c] == Approx(sum / float(alone.size())).margin(1e-6));
  }
  // The label follows the combined probabilities.
  CHECK(mean.label == (mean.probs[pos] >= 0.5f ? pos : 1 - pos));
  // Saved and loaded, the choice stays; a bad one in a file is refused.
  model.classifier.windows = Windows::first;
  const std::string bytes = encode_model(model);
  CHECK(decode_model(bytes, "m").classifier.windows == Windows::first);
}
