// zibert variants: let a model read characters it has no row for as variants
// it has (text/variants.hpp): 仏 as 佛, a traditional form as the simplified
// one. The weights stay as they are; only which row a character reads changes.
#include <cstdio>

#include "cli.hpp"
#include "zibert/base/io.hpp"
#include "zibert/text/variants.hpp"

namespace zibert::cli {
namespace {

struct VariantsCli {
  std::string model, table, out, readings;
  bool clear = false, quiet = false, sound_alike = false;
  int threads = 0;
};

int run_variants(const VariantsCli& o) {
  apply_threads(o.threads);
  const bool attach = !o.table.empty() || o.sound_alike;
  if (attach == o.clear)
    throw Error("give --table FILE or --sound-alike (attach variants) or --clear (remove them)");
  if (!o.readings.empty() && !o.sound_alike) throw Error("--readings is read by --sound-alike: give both or neither");
  const std::string path = resolve_model_path(o.model);
  check_output_path(o.out);  // the model itself may be --out
  check_not_an_input({"--out", o.out}, {{"--table", o.table}, {"--readings", o.readings}});
  Model model = load_model(path);
  std::map<char32_t, char32_t> variants;
  std::size_t entries = 0, with_rows = 0, sounds = 0;
  if (!o.table.empty()) {
    LineSource in = LineSource::open(o.table);
    const VariantTable table = read_variant_table(in);
    entries = table.size();
    for (const auto& entry : table) with_rows += model.tokenizer.vocab().has_row(entry.first);
    variants = resolve_variants(model.tokenizer.vocab(), table);
  }
  if (o.sound_alike) {  // where the table gave no variant
    const Readings readings = Readings::load(o.readings.empty() ? kDebianUnihanReadings : o.readings);
    for (const auto& [from, to] : sound_alike_table(model.tokenizer.vocab(), readings))
      sounds += variants.emplace(from, to.front()).second;  // each entry: no row, to one that has one
  }
  const std::size_t before = model.tokenizer.vocab().variants().size();
  Vocab vocab = model.tokenizer.vocab();
  vocab.set_variants(variants);
  model.tokenizer = Tokenizer(std::move(vocab), model.tokenizer.normalization());
  save_model(o.out, model);
  if (o.quiet) return kExitOk;
  if (o.clear) {
    std::fprintf(stderr, "saved %s: %zu variants removed\n", o.out.c_str(), before);
    return kExitOk;
  }
  std::fprintf(stderr, "saved %s: %zu characters without a row read as a variant's (%s), replacing %zu",
               o.out.c_str(), variants.size(), variants_sample(variants).c_str(), before);
  if (!o.table.empty())
    std::fprintf(stderr, "; of the table's %zu entries, %zu have rows of their own and %zu no variant in the vocabulary",
                 entries, with_rows, entries - with_rows - (variants.size() - sounds));
  if (o.sound_alike) std::fprintf(stderr, "; %zu of them by sound", sounds);
  std::fputc('\n', stderr);
  return kExitOk;
}

}  // namespace

Runner setup_variants(CLI::App& app) {
  auto o = std::make_shared<VariantsCli>();
  app.footer(
      "Let a model read characters it has no row for as variants it has: for each character of the table\n"
      "that is not in the model's vocabulary, the first of its variants that is. Such a character read as\n"
      "[UNK] before; the weights do not change. zibert-detect-train builds a table of simplified,\n"
      "traditional, Taiwan, Hong Kong and Japanese forms from opencc's dictionaries in its cache\n"
      "(~/.cache/zibert/variants.tsv; data/build-variants in a source tree). The variants replace\n"
      "the ones the model had; train --init keeps them, and --extend-vocab drops the ones that get rows.\n"
      "--sound-alike adds, for the characters the table gives nothing, the most common character the\n"
      "model has that is read the same (Unihan's first reading, tones dropped): a detector then reads a\n"
      "typo of a character it never saw (红烧蹂 for 红烧肉) as the sound it makes.\n\n"
      "Table: one line per character, CHARACTER<TAB>VARIANTS (one or more characters, preferred first);\n"
      "blank lines and lines starting with # are skipped.\n\n"
      "Example:\n"
      "  zibert variants -m my.safetensors --table variants.tsv --out my.safetensors\n"
      "  zibert variants -m my.safetensors --table variants.tsv --sound-alike --out my.safetensors\n"
      "  zibert info -m my.safetensors");
  add_required_model_option(app, o->model);
  app.add_option("--table", o->table, "Variant table: CHARACTER<TAB>VARIANTS per line")->check(CLI::ExistingFile);
  app.add_flag("--sound-alike", o->sound_alike,
               "Also read a character without a row as the most common one with a row that is read the same");
  app.add_option("--readings", o->readings, "The readings table for --sound-alike (default: Debian's Unihan_Readings.txt.bz2)")
      ->check(CLI::ExistingFile);
  app.add_flag("--clear", o->clear, "Remove the model's variants instead");
  app.add_option("--out", o->out, "Where to write the model (may be the model itself)")->required();
  app.add_flag("-q,--quiet", o->quiet, "Print nothing on success");
  add_threads_option(app, o->threads);
  return [o] { return run_variants(*o); };
}

}  // namespace zibert::cli
