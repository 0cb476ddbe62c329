// zibert quantize: a model's matrices to int8, for faster inference and a
// smaller file (model/quantization.hpp, infer/int8_net.hpp); or, --to
// float16, every weight stored in half precision: half the file, the same
// float32 computation.
#include <cstdio>
#include <filesystem>

#include "cli.hpp"
#include "zibert/base/io.hpp"
#include "zibert/nn/qgemm.hpp"

namespace zibert::cli {
namespace {

struct QuantizeCli {
  std::string model, out, to = "int8";
  bool quiet = false;
  int threads = 0;
};

int run_quantize(const QuantizeCli& o) {
  apply_threads(o.threads);
  const std::string path = resolve_model_path(o.model);
  check_output_path(o.out);
  check_not_an_input({"--out", o.out}, {{"-m", path}});
  const Model model = load_model(path);
  if (model.quantization)
    throw Error(path + ": this model is already int8 (zibert quantize's); quantize the float32 model it came from");
  const bool half = o.to == "float16";
  if (half && model.float16) throw Error(path + ": this model is float16 already");
  const Model q = half ? float16_model(model) : quantize_model(model);
  save_model(o.out, q);
  if (!o.quiet) {
    const auto before = std::filesystem::file_size(path), after = std::filesystem::file_size(o.out);
    const std::string what = half ? "every weight float16" : std::to_string(q.quantization->tensors.size()) + " matrices int8";
    std::fprintf(stderr, "saved %s: %s, %.2f MB (%.0f %% of %s's %.2f MB)", o.out.c_str(), what.c_str(),
                 double(after) / 1e6, 100.0 * double(after) / double(before), path.c_str(), double(before) / 1e6);
    if (half)
      std::fprintf(stderr, "\ncomputed in float32 as before\n");
    else
      std::fprintf(stderr, "\nint8 products on this machine: %s\n", int8_isa_name(int8_isa()));
  }
  return kExitOk;
}

}  // namespace

Runner setup_quantize(CLI::App& app) {
  auto o = std::make_shared<QuantizeCli>();
  app.footer(
      "Quantize a model to int8: the embeddings and every Linear's weight become int8 with one float32 scale\n"
      "per row; biases and LayerNorms stay float32. Inference then quantizes each layer's input per row and\n"
      "multiplies in int32 (AMX, AVX-512 VNNI, AVX-VNNI or AVX2, chosen from the CPU at run time). classify,\n"
      "eval, embed, explain, info and bench -m take the int8 file as the float32 one; train --init does not.\n"
      "ZIBERT_INT8_ISA=amx-int8|avx512-vnni|avx-vnni|avx2|scalar picks the path by hand (all give the same results).\n"
      "--to float16 stores every weight in half precision instead: half the file, computed in float32 as before\n"
      "(each weight rounded to the nearest float16); every command takes it, train --init and pretrain --init too.\n\n"
      "Example:\n"
      "  zibert quantize -m model.safetensors --out model.int8.safetensors\n"
      "  zibert classify -m model.int8.safetensors notes.txt\n"
      "  zibert quantize --to float16 -m enc.safetensors --out enc.f16.safetensors");
  add_required_model_option(app, o->model);
  app.add_option("--out", o->out, "Where to write the quantized model")->required();
  app.add_option("--to", o->to, "int8 (matrices int8, for faster inference) or float16 (every weight stored in half precision)")
      ->check(CLI::IsMember({"int8", "float16"}))
      ->capture_default_str();
  app.add_flag("-q,--quiet", o->quiet, "Print nothing on success");
  add_threads_option(app, o->threads);
  return [o] { return run_quantize(*o); };
}

}  // namespace zibert::cli
