// Models stored in float16 (zibert quantize --to float16): the half
// conversion, the file format and a reader that trusts nothing, and the
// commands that take such a model.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>

#include "helpers.hpp"
#include "zibert/base/error.hpp"
#include "zibert/base/half.hpp"
#include "zibert/infer/predictor.hpp"

using namespace zibert;
using namespace zibert::test;
namespace fs = std::filesystem;

namespace {

bool is_nan_half(std::uint16_t h) { return (h & 0x7C00u) == 0x7C00u && (h & 0x3FFu) != 0; }

void set_half(EditedTensor& t, std::size_t i, std::uint16_t h) { std::memcpy(t.bytes.data() + 2 * i, &h, 2); }

// A tensor's values as F16 (from F32), or as F32 (from F16).
void convert(EditedTensor& t, DType to) {
  if (t.dtype == to) return;
  const std::size_t n = t.bytes.size() / dtype_size(t.dtype);
  std::string out(n * dtype_size(to), '\0');
  for (std::size_t i = 0; i < n; ++i) {
    if (to == DType::f16) {
      float f = 0;
      std::memcpy(&f, t.bytes.data() + 4 * i, 4);
      const std::uint16_t h = half_from_float(f);
      std::memcpy(out.data() + 2 * i, &h, 2);
    } else {
      std::uint16_t h = 0;
      std::memcpy(&h, t.bytes.data() + 2 * i, 2);
      const float f = float_from_half(h);
      std::memcpy(out.data() + 4 * i, &f, 4);
    }
  }
  t = {t.shape, to, out};
}

}  // namespace

TEST_CASE("float16 conversion: exact widening, nearest-even rounding, overflow to infinity", "[float16]") {
  // Every half widens to a float that narrows back to it (NaNs stay NaN).
  for (std::uint32_t h = 0; h <= 0xFFFF; ++h) {
    const float f = float_from_half(static_cast<std::uint16_t>(h));
    const std::uint16_t back = half_from_float(f);
    if (is_nan_half(static_cast<std::uint16_t>(h))) {
      REQUIRE(std::isnan(f));
      REQUIRE(is_nan_half(back));
    } else {
      REQUIRE(back == h);
    }
  }
  // Halfway between neighbours (subnormals included) goes to the even one,
  // and the floats just either side of halfway to the nearer.
  for (std::uint16_t h = 0; h < 0x7BFF; ++h) {
    const float lo = float_from_half(h), hi = float_from_half(static_cast<std::uint16_t>(h + 1));
    const float mid = lo + (hi - lo) / 2;  // exact: halves carry 11 significant bits, floats 24
    REQUIRE(half_from_float(mid) == ((h & 1u) ? h + 1 : h));
    REQUIRE(half_from_float(std::nextafter(mid, 0.0f)) == h);
    REQUIRE(half_from_float(std::nextafter(mid, 1e9f)) == h + 1);
    REQUIRE(half_from_float(-mid) == (0x8000u | ((h & 1u) ? h + 1 : h)));
  }
  CHECK(half_from_float(1.0f) == 0x3C00);
  CHECK(half_from_float(-2.0f) == 0xC000);
  CHECK(half_from_float(-0.0f) == 0x8000);
  CHECK(half_from_float(kHalfMax) == 0x7BFF);
  CHECK(half_from_float(65519.996f) == 0x7BFF);
  CHECK(half_from_float(65520.0f) == 0x7C00);  // halfway to the next step: even, which is infinity
  CHECK(half_from_float(1e10f) == 0x7C00);
  CHECK(half_from_float(-INFINITY) == 0xFC00);
  CHECK(is_nan_half(half_from_float(NAN)));
  CHECK(half_from_float(0x1p-24f) == 0x0001);    // the smallest subnormal
  CHECK(half_from_float(0x1p-25f) == 0x0000);    // half of it: ties to even, zero
  CHECK(half_from_float(0x1.8p-24f) == 0x0002);  // one and a half: ties to even, two
  CHECK(half_from_float(0x1p-26f) == 0x0000);
  CHECK(half_from_float(0x1p-14f) == 0x0400);  // the smallest normal
  CHECK(float_from_half(0x7BFF) == kHalfMax);
  CHECK(float_from_half(0x0001) == 0x1p-24f);
  CHECK(std::isinf(float_from_half(0x7C00)));
}

TEST_CASE("a float16 model stores every weight as F16 and reads back the same", "[float16][model_file]") {
  const bool encoder = GENERATE(false, true);
  const Model model = encoder ? tiny_encoder(3) : tiny_classifier(3);
  const Model half = float16_model(model);
  CHECK(half.float16);
  CHECK_FALSE(model.float16);
  for (std::size_t i = 0; i < model.net.params().size(); ++i)
    REQUIRE(half.net.params()[i] == float_from_half(half_from_float(model.net.params()[i])));
  CHECK(half.net.params() != model.net.params());  // rounded, so not the float32 values

  const std::string bytes = encode_model(half);
  const SafeTensors file = decode_safetensors(bytes, "f16");
  CHECK(file.metadata.at("dtype") == "float16");
  for (const auto& [name, t] : file.tensors) CHECK(t.dtype == DType::f16);
  const Model back = decode_model(bytes, "f16");
  CHECK(back.float16);
  CHECK(back.net.params() == half.net.params());
  CHECK(encode_model(back) == bytes);  // deterministic, and float16 again when saved again
  CHECK(bytes.size() < encode_model(model).size());
  // A float32 file has no "dtype": its bytes are what they were before float16 existed.
  CHECK(decode_safetensors(encode_model(model), "f32").metadata.count("dtype") == 0);
  if (!encoder) {
    const std::vector<char32_t> text = normalize("他们点了一坛佛跳墙", Normalization{});
    CHECK(Predictor(back).predict({text})[0].probs == Predictor(half).predict({text})[0].probs);
  }

  // int8 from a float16 model keeps its other tensors float32, as every int8 model.
  const Model q = quantize_model(back);
  CHECK_FALSE(q.float16);
  const std::string bias = encoder ? "cls.predictions.bias" : "classifier.bias";
  CHECK(decode_safetensors(encode_model(q), "q").tensors.at(bias).dtype == DType::f32);
  CHECK_FALSE(decode_model(encode_model(q), "q").float16);

  CHECK_THROWS_WITH(float16_model(half), Catch::Contains("float16 already"));
  CHECK_THROWS_WITH(float16_model(q), Catch::Contains("int8"));
  Model big = model;
  big.net.params()[5] = 7e4f;  // in the word embeddings
  CHECK_THROWS_WITH(float16_model(big), Catch::Contains("bert.embeddings.word_embeddings.weight") &&
                                            Catch::Contains("beyond float16's"));
  // A checkpoint is training's, in float32.
  CHECK_THROWS_WITH(encode_checkpoint({half, {}, {}, {}}), Catch::Contains("float32"));
}

TEST_CASE("damaged float16 model files are clear errors", "[float16][model_file]") {
  const std::string good = encode_model(float16_model(tiny_classifier(4)));
  const std::string w = "bert.encoder.layer.1.intermediate.dense.weight";
  struct Case {
    const char* what;
    std::string bytes;
    std::string message;
  };
  auto c = GENERATE_COPY(values<Case>({
      {"a NaN weight", rebuild_file(good, [w](EditedFile& e) { set_half(e.tensors[w], 3, 0x7E00); }),
       "tensor " + w + " holds a NaN or infinite weight"},
      {"an infinite weight", rebuild_file(good, [w](EditedFile& e) { set_half(e.tensors[w], 0, 0xFC00); }),
       "holds a NaN or infinite weight"},
      {"an F32 tensor in a float16 model",
       rebuild_file(good,
                    [](EditedFile& e) { convert(e.tensors["bert.pooler.dense.bias"], DType::f32); }),
       "bert.pooler.dense.bias is F32 where the model needs F16"},
      {"F16 tensors without the dtype metadata", rebuild_file(good, [](EditedFile& e) { e.metadata.erase("dtype"); }),
       "is F16 where the model needs F32 (a float16 tensor in a model whose metadata has no \"dtype\": \"float16\")"},
      {"F32 tensors under the dtype metadata",
       rebuild_file(encode_model(tiny_classifier(4)), [](EditedFile& e) { e.metadata["dtype"] = "float16"; }),
       "is F32 where the model needs F16"},
      {"another dtype", rebuild_file(good, [](EditedFile& e) { e.metadata["dtype"] = "bfloat16"; }),
       "metadata \"dtype\" is \"bfloat16\""},
      {"float16 and int8 at once",
       rebuild_file(encode_model(quantize_model(tiny_classifier(4))),
                    [](EditedFile& e) { e.metadata["dtype"] = "float16"; }),
       "both \"dtype\": \"float16\" and \"quantization\""},
  }));
  INFO(c.what);
  const std::string message = decode_error(c.bytes);
  CHECK_THAT(message, Catch::Contains(c.message));
  CHECK_THAT(message, Catch::Contains("bad.safetensors"));
}

TEST_CASE("a checkpoint's state tensors must be F32", "[float16][model_file]") {
  const Model model = tiny_classifier(2);
  const std::vector<float> state(model.net.params().size(), 0.5f);
  const std::string dir = temp_dir(), path = dir + "/run.ckpt";
  Checkpoint c{model, state, state, state};
  c.model.training = {{"checkpoint", {{"step", 1}}}};
  write_text(path, rebuild_file(encode_checkpoint(c), [](EditedFile& e) { convert(e.tensors["zibert.adam.m"], DType::f16); }));
  CHECK_THROWS_WITH(load_checkpoint(path), Catch::Contains("zibert.adam.m is not F32"));
  write_text(path, rebuild_file(encode_checkpoint(c), [](EditedFile& e) {
               e.metadata["dtype"] = "float16";
               for (auto& [name, t] : e.tensors)
                 if (name.rfind("zibert.", 0) != 0) convert(t, DType::f16);
             }));
  CHECK_THROWS_WITH(load_checkpoint(path), Catch::Contains("training keeps float32"));
}

TEST_CASE("zibert quantize --to float16, and the commands that take a float16 model", "[float16][cli]") {
  // A float32 classifier with the shipped detector's variants and a
  // calibration: the detector (stored in float16) fine-tuned for an epoch.
  const std::string dir = temp_dir(), src = dir + "/f32.safetensors";
  const std::string demo = std::string(ZIBERT_SOURCE_DIR) + "/data/demo.tsv", h = dir + "/h.safetensors";
  REQUIRE(run_zibert("train --init " ZIBERT_SOURCE_DIR "/models/fotiaoqiang.safetensors --data " + demo + " --dev " +
                     demo + " --epochs 1 -q --out " + src)
              .status == 0);
  RunResult r = run_zibert("quantize --to float16 -m " + src + " --out " + h);
  REQUIRE(r.status == 0);
  CHECK_THAT(r.err, Catch::Contains("saved " + h + ": every weight float16"));
  // The tensors take about half the bytes (the header, with the variant table, is the same).
  const auto tensor_bytes = [](const std::string& path) {
    const std::string bytes = read_text(path);
    std::uint64_t header = 0;
    for (int i = 7; i >= 0; --i) header = header << 8 | static_cast<unsigned char>(bytes[std::size_t(i)]);
    return bytes.size() - 8 - header;
  };
  CHECK(tensor_bytes(h) < tensor_bytes(src) * 11 / 20);
  const nlohmann::json j = nlohmann::json::parse(run_zibert("info --json -m " + h).out);
  CHECK(j["dtype"] == "float16");
  CHECK(nlohmann::json::parse(run_zibert("info --json -m " + src).out)["dtype"] == "float32");
  CHECK_THAT(run_zibert("info -m " + h).out, Catch::Contains("as F16"));

  // The same answers on the demo texts; the variants and calibration kept.
  const std::string texts = write_demo_texts(dir);
  classify_same_labels(src, h, texts);
  CHECK(j["variants"] == nlohmann::json::parse(run_zibert("info --json -m " + src).out)["variants"]);
  CHECK(j["calibration"].is_object());
  RunResult e = run_zibert("eval -m " + h + " --data " + demo + " --json");
  REQUIRE(e.status == 0);
  CHECK(nlohmann::json::parse(e.out)["accuracy"].get<double>() == 1.0);
  CHECK(run_zibert("embed -m " + h + " " + texts).status == 0);
  CHECK(run_zibert("explain -m " + h + " 年夜饭的压轴菜是佛跳墙。").status == 0);

  // Commands that rewrite a model keep float16; training makes float32.
  REQUIRE(run_zibert("calibrate -m " + h + " --data " + demo + " --out " + dir + "/c.safetensors").status == 0);
  CHECK(nlohmann::json::parse(run_zibert("info --json -m " + dir + "/c.safetensors").out)["dtype"] == "float16");
  RunResult t = run_zibert("train --init " + h + " --data " + demo + " --dev " + demo + " --epochs 1 -q --out " + dir +
                           "/t.safetensors");
  REQUIRE(t.status == 0);
  CHECK(nlohmann::json::parse(run_zibert("info --json -m " + dir + "/t.safetensors").out)["dtype"] == "float32");
  RunResult q = run_zibert("quantize -m " + h + " --out " + dir + "/q.safetensors");
  REQUIRE(q.status == 0);
  CHECK(nlohmann::json::parse(run_zibert("info --json -m " + dir + "/q.safetensors").out)["dtype"] == "int8");

  // What is refused, with exit 2.
  RunResult again = run_zibert("quantize --to float16 -m " + h + " --out " + dir + "/hh.safetensors");
  CHECK(again.status == 2);
  CHECK_THAT(again.err, Catch::Contains(h + ": this model is float16 already"));
  RunResult from_int8 = run_zibert("quantize --to float16 -m " + dir + "/q.safetensors --out " + dir + "/qh.safetensors");
  CHECK(from_int8.status == 2);
  CHECK_THAT(from_int8.err, Catch::Contains("already int8"));
  RunResult unknown = run_zibert("quantize --to int4 -m " + src + " --out " + dir + "/x.safetensors");
  CHECK(unknown.status == 2);
  CHECK_THAT(unknown.err, Catch::Contains("--to"));
  CHECK_FALSE(fs::exists(dir + "/hh.safetensors"));
  CHECK_FALSE(fs::exists(dir + "/x.safetensors"));
}

TEST_CASE("every shipped model file is under the repository's 5 MB limit, and the detector is stored in float16",
          "[float16][shipped]") {
  int models = 0;
  for (const auto& entry : fs::directory_iterator(ZIBERT_SOURCE_DIR "/models")) {
    if (entry.path().extension() != ".safetensors" || entry.path().string().find(".f32.") != std::string::npos)
      continue;  // the float32 originals train-fotiaoqiang and train-zh-encoder leave are not committed
    INFO(entry.path());
    CHECK(fs::file_size(entry.path()) <= 5 * 1024 * 1024);
    ++models;
  }
  CHECK(models == 4);
  const std::string detector = ZIBERT_SOURCE_DIR "/models/fotiaoqiang.safetensors";
  CHECK(nlohmann::json::parse(run_zibert("info --json -m " + detector).out)["dtype"] == "float16");
}

TEST_CASE("the shipped 4-layer encoder is float16, under 5 MB, and fine-tunes and pretrains into float32",
          "[float16][pretrain][shipped]") {
  const std::string path = ZIBERT_SOURCE_DIR "/models/zh-encoder-l4.safetensors", dir = temp_dir();
  CHECK(fs::file_size(path) <= 5 * 1024 * 1024);
  const nlohmann::json j = nlohmann::json::parse(run_zibert("info --json -m " + path).out);
  CHECK(j["task"] == "mlm");
  CHECK(j["dtype"] == "float16");
  CHECK(j["config"]["layers"] == 4);
  CHECK(j["training"]["dev_mlm_accuracy"].get<double>() > 0.45);
  RunResult r = run_zibert("fill-mask -k 1 -m " + path + " '请使用[MASK]令行参数。'");
  REQUIRE(r.status == 0);
  CHECK_THAT(r.out, Catch::StartsWith("1\t1\t命\t"));
  // pretrain --init continues it in float32.
  write_text(dir + "/more.txt", "年夜饭的压轴菜是佛跳墙。\n请使用命令行参数。\n佛跳墙是一道福建名菜。\n");
  RunResult p = run_zibert("pretrain --init " + path + " --text " + dir + "/more.txt --epochs 1 --batch 2 -q --out " +
                           dir + "/enc.safetensors");
  REQUIRE(p.status == 0);
  CHECK(nlohmann::json::parse(run_zibert("info --json -m " + dir + "/enc.safetensors").out)["dtype"] == "float32");
}
