// zibert embed: one vector per input line (fastText's print-sentence-vectors),
// streamed in chunks like classify.
#include <bit>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "chunks.hpp"
#include "cli.hpp"
#include "zibert/base/progress.hpp"
#include "zibert/infer/embedder.hpp"

namespace zibert::cli {
namespace {

struct EmbedCli {
  std::vector<std::string> inputs;
  std::string model, pool = "mean", format = "tsv", invalid = "error";
  bool progress = false;
  int threads = 0;
  std::int64_t line_offset = 0;  // --line-offset
};

// One chunk's vectors (lines, C) in the chosen format.
std::string records(const EmbedCli& o, const std::vector<float>& vecs, Index dim, const LineSource& src,
                    std::int64_t first, bool names) {
  const std::size_t n = vecs.size() / static_cast<std::size_t>(dim);
  if (o.format == "f32") {  // raw little-endian float32, row after row
    static_assert(std::endian::native == std::endian::little, "f32 output is written as the machine stores it");
    return std::string(reinterpret_cast<const char*>(vecs.data()), vecs.size() * sizeof(float));
  }
  std::string out;
  char buf[32];
  for (std::size_t i = 0; i < n; ++i) {
    const float* v = &vecs[i * static_cast<std::size_t>(dim)];
    if (o.format == "jsonl") {
      nlohmann::ordered_json j;
      if (names) j["file"] = display_name(src);
      j["line"] = first + static_cast<std::int64_t>(i);
      j["vector"] = std::vector<float>(v, v + dim);
      out += j.dump() + "\n";
      continue;
    }
    for (Index d = 0; d < dim; ++d) {
      std::snprintf(buf, sizeof buf, "%s%.6g", d ? "\t" : "", double(v[d]));
      out += buf;
    }
    out += "\n";
  }
  return out;
}

int run_embed(const EmbedCli& o) {
  apply_threads(o.threads);
  const Model model = load_model(resolve_model_path(o.model));
  Tokenizer tokenizer = model.tokenizer;
  tokenizer.set_replace_invalid(o.invalid == "replace");
  Embedder embedder(model, o.pool == "cls" ? Pool::cls : Pool::mean);
  const std::vector<std::string> inputs = o.inputs.empty() ? std::vector<std::string>{"-"} : o.inputs;
  for (const std::string& path : inputs) {
    LineSource src = open_input(path);
    std::int64_t line_no = o.line_offset;
    InputProgress progress(InputProgress::wanted(o.progress, src));
    for_each_chunk(src, tokenizer, line_no, [&](const Chunk& chunk) {
      if (!chunk.ids.empty())  // the lines before a bad one are written
        write_out(records(o, embedder.embed_ids(chunk.ids), embedder.dim(), src, chunk.first, inputs.size() > 1));
      progress.update(src, line_no - o.line_offset);
      return true;
    });
    progress.finish(src, line_no - o.line_offset);
  }
  return kExitOk;
}

}  // namespace

Runner setup_embed(CLI::App& app) {
  auto o = std::make_shared<EmbedCli>();
  app.footer("One vector per input line (empty lines included): the mean of the last layer's states over the\n"
             "line's tokens, or its [CLS] state (--pool cls); long lines average their windows.\n\nExamples:\n"
             "  zibert embed notes.txt\n  zibert embed --format jsonl notes.txt | jq .vector\n"
             "  zibert embed --format f32 notes.txt > v.f32   # numpy.fromfile(..., 'float32').reshape(-1, C)");
  add_inputs_option(app, o->inputs);
  add_model_option(app, o->model);
  app.add_option("--pool", o->pool, "mean of the tokens' states, or the [CLS] state")
      ->check(CLI::IsMember({"mean", "cls"}))->capture_default_str();
  app.add_option("--format", o->format, "tsv (tab-separated floats), jsonl, or f32 (raw little-endian float32)")
      ->check(CLI::IsMember({"tsv", "jsonl", "f32"}))->capture_default_str();
  add_invalid_option(app, o->invalid);
  app.add_flag("--progress", o->progress, "Show progress on stderr even when it is not a terminal");
  add_line_offset_option(app, o->line_offset);
  add_threads_option(app, o->threads);
  add_bf16_option(app);
  return [o] { return run_embed(*o); };
}

}  // namespace zibert::cli
