#include <omp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <Eigen/Core>
#include <cmath>
#include <cstdlib>

#include "cli.hpp"
#include "zibert/base/io.hpp"

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
  return exe.substr(0, slash) + "/../share/zibert/models/fotiaoqiang.safetensors";
}

}  // namespace

std::string resolve_model_path(const std::string& flag) {
  if (!flag.empty()) return flag;
  if (const char* env = std::getenv("ZIBERT_MODEL"); env && *env) return env;
  for (const std::string& candidate : {beside_executable(), std::string(ZIBERT_INSTALL_MODELS "/fotiaoqiang.safetensors"),
                                       std::string(ZIBERT_SOURCE_MODELS "/fotiaoqiang.safetensors")})
    if (!candidate.empty() && is_file(candidate)) return candidate;
  throw Error("no model given and no default model found (use -m MODEL or set ZIBERT_MODEL)");
}

Classifier load_classifier(const std::string& flag) { return load_model(resolve_model_path(flag)); }

int apply_threads(int threads) {
  if (threads <= 0) threads = omp_get_num_procs();
  omp_set_num_threads(threads);
  Eigen::setNbThreads(threads);
  return threads;
}

void add_model_option(CLI::App& app, std::string& model) {
  app.add_option("-m,--model", model, "Model file (default: $ZIBERT_MODEL, then the installed model)");
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
