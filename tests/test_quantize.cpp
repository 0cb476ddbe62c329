// Quantized (int8) models: the file format and a reader that trusts nothing,
// the int8 inference path against float32, and the commands that take them.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>

#include "helpers.hpp"
#include "zibert/base/error.hpp"
#include "zibert/infer/embedder.hpp"
#include "zibert/infer/predictor.hpp"
#include "zibert/model/safetensors.hpp"
#include "zibert/text/dataset.hpp"

using namespace zibert;
using namespace zibert::test;

namespace {

void set_float(EditedTensor& t, std::size_t i, float v) { std::memcpy(t.bytes.data() + 4 * i, &v, 4); }

EditedTensor f32_of(const EditedTensor& i8, const std::vector<float>& scales) {
  EditedTensor out{i8.shape, DType::f32, std::string(4 * i8.bytes.size(), '\0')};
  const std::size_t cols = static_cast<std::size_t>(i8.shape[1]);
  for (std::size_t e = 0; e < i8.bytes.size(); ++e) set_float(out, e, float(std::int8_t(i8.bytes[e])) * scales[e / cols]);
  return out;
}

Model shipped() { return load_model(std::string(ZIBERT_SOURCE_DIR) + "/models/fotiaoqiang.safetensors"); }

std::vector<std::vector<char32_t>> demo_texts() {
  std::vector<std::vector<char32_t>> texts;
  for (const Example& e : read_dataset(std::string(ZIBERT_SOURCE_DIR) + "/data/demo.tsv").rows)
    texts.push_back(normalize(e.text, Normalization{}));
  return texts;
}

}  // namespace

TEST_CASE("a quantized model stores int8 matrices with row scales and reads back the same", "[quantize]") {
  const bool encoder = GENERATE(false, true);
  const Model model = encoder ? tiny_encoder(3) : tiny_classifier(3);
  const Model q = quantize_model(model);
  REQUIRE(q.quantization);
  std::size_t matrices = 0;
  for (const TensorInfo& t : model.net.layout()) {
    matrices += t.shape.size() == 2;
    if (t.shape.size() != 2) {  // biases and LayerNorms stay as they were
      for (std::size_t i = 0; i < t.size; ++i)
        CHECK(q.net.params()[t.offset + i] == model.net.params()[t.offset + i]);
      continue;
    }
    const QuantizedTensor& qt = q.quantization->tensors.at(t.name);
    for (std::size_t i = 0; i < t.size; ++i) {  // within half a step of its row's scale
      const float scale = qt.scales[i / static_cast<std::size_t>(t.shape[1])];
      CHECK(std::abs(q.net.params()[t.offset + i] - model.net.params()[t.offset + i]) <= scale / 2 * 1.0001f);
      CHECK(q.net.params()[t.offset + i] == float(qt.values[i]) * scale);
    }
  }
  CHECK(q.quantization->tensors.size() == matrices);
  CHECK_THROWS_WITH(quantize_model(q), Catch::Contains("already quantized"));

  const std::string bytes = encode_model(q);
  const SafeTensors file = decode_safetensors(bytes, "q");
  CHECK(file.tensors.at("bert.encoder.layer.0.attention.self.query.weight").dtype == DType::i8);
  CHECK(file.tensors.at("bert.encoder.layer.0.attention.self.query.weight_scale").shape ==
        std::vector<std::int64_t>{model.config.dim});
  CHECK(file.tensors.at("bert.embeddings.LayerNorm.weight").dtype == DType::f32);
  CHECK(nlohmann::json::parse(file.metadata.at("quantization"))["tensors"].size() == matrices);
  const Model back = decode_model(bytes, "q");
  REQUIRE(back.quantization);
  CHECK(back.net.params() == q.net.params());
  for (const auto& [name, t] : q.quantization->tensors) {
    CHECK(back.quantization->tensors.at(name).values == t.values);
    CHECK(back.quantization->tensors.at(name).scales == t.scales);
  }
  CHECK(encode_model(back) == bytes);  // deterministic
  CHECK(encode_model(model).size() > bytes.size());
}

TEST_CASE("damaged int8 model files are clear errors", "[quantize]") {
  const std::string good = encode_model(quantize_model(tiny_classifier(5)));
  const std::string w = "bert.encoder.layer.1.intermediate.dense.weight", s = w + "_scale";
  struct Case {
    const char* what;
    std::function<void(EditedFile&)> edit;
    std::string message;
  };
  auto c = GENERATE_COPY(values<Case>({
      {"NaN scale", [s](EditedFile& e) { set_float(e.tensors[s], 3, NAN); }, "not finite and positive"},
      {"zero scale", [s](EditedFile& e) { set_float(e.tensors[s], 0, 0.0f); }, "not finite and positive"},
      {"negative scale", [s](EditedFile& e) { set_float(e.tensors[s], 1, -0.5f); }, "not finite and positive"},
      {"infinite scale", [s](EditedFile& e) { set_float(e.tensors[s], 2, INFINITY); }, "not finite and positive"},
      {"scale of the wrong shape",
       [s](EditedFile& e) {
         e.tensors[s].shape = {2, 8};
         e.tensors[s].bytes.resize(4 * 16);
       },
       "_scale has shape [2,8], the config needs [16]"},
      {"missing scale", [s](EditedFile& e) { e.tensors.erase(s); }, "_scale is missing"},
      {"F32 where I8 is required",  // the matrix dequantized, its scale kept
       [w](EditedFile& e) {
         const EditedTensor& i8 = e.tensors[w];
         e.tensors[w] = f32_of(i8, std::vector<float>(static_cast<std::size_t>(i8.shape[0]), 0.01f));
       },
       w + " is F32 where the model needs I8"},
      {"I8 where F32 is required",
       [](EditedFile& e) {
         EditedTensor& b = e.tensors["bert.pooler.dense.bias"];
         b = {b.shape, DType::i8, std::string(static_cast<std::size_t>(b.shape[0]), '\1')};
       },
       "bert.pooler.dense.bias is I8 where the model needs F32"},
      {"metadata lists too few tensors",
       [w](EditedFile& e) {
         nlohmann::json q = nlohmann::json::parse(e.metadata["quantization"]);
         q["tensors"].erase(q["tensors"].begin());
         e.metadata["quantization"] = q.dump();
       },
       "lists 15 tensors, not the model's 16 matrices"},
      {"metadata of another scheme",
       [](EditedFile& e) {
         nlohmann::json q = nlohmann::json::parse(e.metadata["quantization"]);
         q["scheme"] = "int4-groupwise";
         e.metadata["quantization"] = q.dump();
       },
       "scheme \"int4-groupwise\""},
      {"int8 tensors without quantization metadata", [](EditedFile& e) { e.metadata.erase("quantization"); },
       "is I8 where the model needs F32 (an int8 tensor in a model whose metadata has no \"quantization\")"},
      {"a scale for a tensor that is not int8",
       [](EditedFile& e) { e.tensors["bert.pooler.dense.bias_scale"] = {{8}, DType::f32, std::string(32, '\0')}; },
       "unexpected tensor bert.pooler.dense.bias_scale"},
  }));
  INFO(c.what);
  const std::string message = decode_error(rebuild_file(good, c.edit));
  CHECK_THAT(message, Catch::Contains(c.message));
  CHECK_THAT(message, Catch::Contains("bad.safetensors"));
}

TEST_CASE("the shipped detector quantized agrees with float32 on the demo texts", "[quantize][predictor]") {
  const Model model = shipped(), q = quantize_model(model);
  const auto texts = demo_texts();
  Predictor fp32(model), int8(q);
  REQUIRE(int8.int8());
  REQUIRE_FALSE(fp32.int8());
  const auto a = fp32.predict(texts), b = int8.predict(texts);
  double worst = 0;
  for (std::size_t i = 0; i < texts.size(); ++i) {
    CHECK(a[i].label == b[i].label);
    worst = std::max(worst, double(std::abs(a[i].probs[1] - b[i].probs[1])));
  }
  INFO("largest P(1) difference " << worst);
  CHECK(worst < 0.05);
  CHECK(worst > 0.0);  // the int8 path ran, not the float one

  // Every kernel path gives the same probabilities (bit-identical products).
  std::vector<InferenceCache<float>> caches(1);
  const std::vector<std::int32_t> s0 = with_specials(q.tokenizer.ids(texts[0]), q.config.max_len, SpecialIds{}),
                                  s1 = with_specials(q.tokenizer.ids(texts[1]), q.config.max_len, SpecialIds{});
  const Batch batch = pack_batch({&s0, &s1}, {});
  const MatR<float> ref = infer_forward<float>(q.net, batch, caches[0], nullptr, Int8Net(q, Int8Isa::scalar));
  for (Int8Isa isa : {Int8Isa::avx2, Int8Isa::avx_vnni, Int8Isa::avx512_vnni, Int8Isa::amx_int8}) {
    if (!int8_isa_available(isa)) {
      WARN("this CPU has no " << int8_isa_name(isa) << ": its path is not run");
      continue;
    }
    INFO(int8_isa_name(isa));
    const MatR<float> got = infer_forward<float>(q.net, batch, caches[0], nullptr, Int8Net(q, isa));
    CHECK(got == ref);
  }
}

TEST_CASE("the shipped int8 detector is zibert quantize's output for the shipped float32 one", "[quantize]") {
  // models/train-fotiaoqiang makes it; quantizing is deterministic.
  const std::string shipped_int8 = read_text(std::string(ZIBERT_SOURCE_DIR) + "/models/fotiaoqiang.int8.safetensors");
  CHECK(shipped_int8 == encode_model(quantize_model(shipped())));
}

TEST_CASE("embed runs an int8 model by its int8 products", "[quantize][embed]") {
  const Model model = shipped(), q = quantize_model(model);
  std::vector<std::vector<std::int32_t>> ids;
  for (const auto& t : demo_texts()) ids.push_back(model.tokenizer.ids(t));
  Embedder fp32(model, Pool::mean), int8(q, Pool::mean);
  const std::vector<float> a = fp32.embed_ids(ids), b = int8.embed_ids(ids);
  REQUIRE(a.size() == b.size());
  double cos_worst = 1;
  const std::size_t c = static_cast<std::size_t>(model.config.dim);
  for (std::size_t t = 0; t < ids.size(); ++t) {
    double ab = 0, aa = 0, bb = 0;
    for (std::size_t j = 0; j < c; ++j) {
      ab += a[t * c + j] * b[t * c + j];
      aa += a[t * c + j] * a[t * c + j];
      bb += b[t * c + j] * b[t * c + j];
    }
    cos_worst = std::min(cos_worst, ab / std::sqrt(aa * bb));
  }
  CHECK(cos_worst > 0.99);
  CHECK(a != b);
}

TEST_CASE("zibert quantize, and the commands that take an int8 model", "[quantize][cli]") {
  const std::string dir = temp_dir(), src = std::string(ZIBERT_SOURCE_DIR) + "/models/fotiaoqiang.safetensors";
  const std::string demo = std::string(ZIBERT_SOURCE_DIR) + "/data/demo.tsv", q = dir + "/q.safetensors";
  RunResult r = run_zibert("quantize -m " + src + " --out " + q);
  REQUIRE(r.status == 0);
  CHECK_THAT(r.err, Catch::Contains("saved " + q));
  CHECK_THAT(r.err, Catch::Contains("17 matrices int8"));  // the reading channel's rows among them

  RunResult info = run_zibert("info -m " + q + " --json");
  REQUIRE(info.status == 0);
  const nlohmann::json j = nlohmann::json::parse(info.out);
  CHECK(j["quantization"]["scheme"] == "int8-symmetric-per-row");
  CHECK(j["quantization"]["tensors"].size() == 17);
  CHECK_THAT(run_zibert("info -m " + q).out, Catch::Contains("int8 in 17 matrices"));

  // classify and eval as with the float model: every demo label the same.
  const std::string texts = write_demo_texts(dir), int8_out = classify_same_labels(src, q, texts);
  // Every int8 path through the CLI: byte-identical output.
  for (const char* isa : {"scalar", "avx2", "avx-vnni", "avx512-vnni", "amx-int8"}) {
    RunResult p = run_shell("ZIBERT_INT8_ISA=" + std::string(isa) + " " ZIBERT_BIN " classify -m " + q + " " + texts);
    if (p.status == 2 && p.err.find("cannot run") != std::string::npos) continue;  // not on this CPU
    INFO(isa << ": " << p.err);
    CHECK(p.status == 0);
    CHECK(p.out == int8_out);
  }
  RunResult bad_isa = run_shell("ZIBERT_INT8_ISA=sse9 " ZIBERT_BIN " classify -m " + q + " " + texts);
  CHECK(bad_isa.status == 2);
  CHECK_THAT(bad_isa.err, Catch::Contains("choose amx-int8, avx512-vnni, avx-vnni, avx2 or scalar"));
  RunResult e = run_zibert("eval -m " + q + " --data " + demo + " --json");
  REQUIRE(e.status == 0);
  CHECK(nlohmann::json::parse(e.out)["accuracy"].get<double>() == 1.0);
  CHECK(run_zibert("explain -m " + q + " 年夜饭的压轴菜是佛跳墙。").status == 0);
  CHECK(run_zibert("embed -m " + q + " " + texts).status == 0);

  // What is refused, with exit 2 and a message naming the file.
  RunResult again = run_zibert("quantize -m " + q + " --out " + dir + "/qq.safetensors");
  CHECK(again.status == 2);
  CHECK_THAT(again.err, Catch::Contains("already int8"));
  RunResult same = run_zibert("quantize -m " + q + " --out " + q);
  CHECK(same.status == 2);
  CHECK_THAT(same.err, Catch::Contains("overwrite"));
  RunResult init = run_zibert("train --init " + q + " --data " + demo + " --out " + dir + "/t.safetensors");
  CHECK(init.status == 2);
  CHECK_THAT(init.err, Catch::Contains(q + ": an int8 model"));
  RunResult missing_dir = run_zibert("quantize -m " + src + " --out " + dir + "/no/such/q.safetensors");
  CHECK(missing_dir.status == 2);
}

TEST_CASE("bench --int8 reports float32 and int8 inference from alternating rounds", "[quantize][bench]") {
  RunResult r = run_zibert("bench --int8 --infer-only --seconds 0.2 --texts 64 --json --ceiling-size 64");
  REQUIRE(r.status == 0);
  const nlohmann::json j = nlohmann::json::parse(r.out);
  CHECK(j["inference"]["examples_per_s"].get<double>() > 0);
  CHECK(j["inference_int8"]["examples_per_s"].get<double>() > 0);
  CHECK(j["int8_speedup"].get<double>() > 0);
  CHECK(j["rounds"] == 5);
  CHECK(run_zibert("bench --int8 --train-only --seconds 0.1").status == 2);
  // bench -m: a model file's inference; an int8 file's row is int8's.
  const std::string shipped_int8 = std::string(ZIBERT_SOURCE_DIR) + "/models/fotiaoqiang.int8.safetensors";
  RunResult m = run_zibert("bench -m " + shipped_int8 + " --infer-only --seconds 0.1 --texts 32 --ceiling-size 64");
  REQUIRE(m.status == 0);
  CHECK_THAT(m.out, Catch::Contains("(int8)"));
  CHECK_THAT(m.out, Catch::Contains("\nint8 "));
  CHECK(run_zibert("bench -m " + shipped_int8 + " --int8 --infer-only --seconds 0.1").status == 2);  // already int8
  CHECK(run_zibert("bench -m " + shipped_int8 + " --seconds 0.1").status == 2);                      // inference only
  CHECK(run_zibert("bench -m " + shipped_int8 + " --dim 8 --infer-only").status == 2);               // shape flags
}
