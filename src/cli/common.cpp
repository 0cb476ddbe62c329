#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "cli.hpp"
#include "zibert/base/io.hpp"
#include "zibert/nn/gemm_bf16.hpp"

namespace zibert::cli {
namespace {

bool is_file(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

// <prefix>/share/zibert/models next to <prefix>/bin/zibert, wherever installed.
std::string beside_executable() {
  char buf[4096];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return "";
  std::string exe(buf, static_cast<std::size_t>(n));
  auto slash = exe.find_last_of('/');
  if (slash == std::string::npos) return "";
  auto up = exe.find_last_of('/', slash == 0 ? 0 : slash - 1);  // <prefix>/bin/zibert → <prefix>
  if (up == std::string::npos || slash == 0) return "";
  return exe.substr(0, up) + "/share/zibert/models";
}

// The folders that hold the shipped models, searched in this order.
std::vector<std::string> model_dirs() {
  std::vector<std::string> dirs;
  if (std::string beside = beside_executable(); !beside.empty()) dirs.push_back(beside);
  dirs.push_back(ZIBERT_INSTALL_MODELS);
  dirs.push_back(ZIBERT_SOURCE_MODELS);
  return dirs;
}

constexpr const char* kDefaultModel = "fotiaoqiang";

}  // namespace

std::string find_model(const std::string& name) {
  if (name.empty() || is_file(name) || name.find('/') != std::string::npos) return name;
  const bool has_suffix = name.size() > 12 && name.compare(name.size() - 12, 12, ".safetensors") == 0;
  for (const std::string& dir : model_dirs()) {
    const std::string candidate = dir + "/" + name + (has_suffix ? "" : ".safetensors");
    if (is_file(candidate)) return candidate;
  }
  return name;  // the loader names the missing file
}

std::string resolve_model_path(const std::string& flag, bool quiet) {
  if (!flag.empty()) return find_model(flag);
  if (const char* env = std::getenv("ZIBERT_MODEL"); env && *env) return find_model(env);
  const std::string found = find_model(kDefaultModel);
  if (found == kDefaultModel)
    throw Error("no model given and no default model found (use -m MODEL or set ZIBERT_MODEL)");
  if (!quiet)
    std::fprintf(stderr, "zibert: no -m given: using the default model %s (the 佛跳墙 detector)\n", found.c_str());
  return found;
}

Model load_classifier(const std::string& flag, bool quiet) {
  const std::string path = resolve_model_path(flag, quiet);
  Model model = load_model(path);
  if (model.config.task != Task::classify)
    throw Error(path + ": this model is an encoder (zibert pretrain's): it has no labels to predict; fine-tune it "
                       "with zibert train --init, or use it with embed or fill-mask");
  return model;
}

void add_model_option(CLI::App& app, std::string& model) {
  app.add_option("-m,--model", model,
                 "Model file, or a shipped model's name (zh-encoder); default: $ZIBERT_MODEL, then the shipped "
                 "佛跳墙 detector, said on stderr");
}

void add_required_model_option(CLI::App& app, std::string& model) {
  app.add_option("-m,--model", model, "Model file to read, or a shipped model's name (required: this command writes a model)")
      ->required();
}

void add_inputs_option(CLI::App& app, std::vector<std::string>& inputs) {
  app.add_option("inputs", inputs, "Files to read; - or none for stdin");
}

void add_invalid_option(CLI::App& app, std::string& invalid) {
  app.add_option("--invalid", invalid, "Invalid UTF-8: error, or replace bad bytes with U+FFFD")
      ->check(CLI::IsMember({"error", "replace"}))
      ->capture_default_str();
}

void add_threads_option(CLI::App& app, int& threads) {
  app.add_option("--threads", threads, "Threads (0 = all cores)")->check(CLI::Range(0, 1024))->capture_default_str();
}

void add_bf16_option(CLI::App& app) {
  app.add_flag_callback(
      "--bf16",
      [] {
        set_matmul_precision(MatmulPrecision::bfloat16);
        Bf16Isa isa = Bf16Isa::emulated;
        try {
          isa = bf16_isa();  // ZIBERT_BF16_ISA may name a path this CPU lacks
        } catch (const Error& e) {
          throw CLI::ValidationError("--bf16", e.what());
        }
        if (isa == Bf16Isa::emulated && !bf16_isa_available(Bf16Isa::avx512_bf16))
          std::fprintf(stderr, "zibert: --bf16: this CPU has neither AMX-BF16 nor AVX-512 BF16, so the bfloat16 "
                               "products are emulated: the same results, no faster than float32\n");
      },
      "Matrix products in bfloat16 (operands rounded to 8-bit mantissas, sums in float32) on AMX or AVX-512 BF16 "
      "where the CPU has it; weights and everything outside the products stay float32");
}

CLI::Validator finite_range(double lo, double hi) {
  const CLI::Range range(lo, hi);
  return CLI::Validator(
      [range](std::string& input) {
        double value = 0;
        if (CLI::detail::lexical_cast(input, value) && std::isnan(value))
          return "Value " + input + " is not a number";
        return range(input);
      },
      range.get_description());
}

CLI::Validator file_or_stdin() {
  return CLI::Validator([](std::string& path) { return path == "-" ? std::string() : CLI::ExistingFile(path); },
                        "FILE or -");
}

Dataset read_data_option(const std::string& path, bool multi_label) {
  if (path == "-") return parse_dataset(read_stdin(), "(standard input)", multi_label);
  return read_dataset(path, multi_label);
}

CLI::Option* add_threshold_option(CLI::App& app, double& threshold) {
  return app.add_option("--threshold", threshold, "P(positive) needed for the positive label (binary models)")
      ->check(finite_range(0.0, 1.0))
      ->capture_default_str();
}

CLI::Option* add_line_offset_option(CLI::App& app, std::int64_t& offset) {
  return app.add_option("--line-offset", offset,
                 "Number lines from N + 1 (JSONL \"line\", -n, errors): for a block of a larger input whose first "
                 "line the caller knows, e.g. parallel --pipe -N 1000 ... --line-offset $(( ({#} - 1) * 1000 ))")
      ->check(CLI::Range(std::int64_t(0), std::int64_t(1) << 62))
      ->capture_default_str();
}

}  // namespace zibert::cli
