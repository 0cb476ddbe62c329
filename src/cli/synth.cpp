// zibert synth: a labelled train/dev/test corpus for a phrase from plain sentences.
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <map>

#include "cli.hpp"
#include "zibert/base/io.hpp"
#include "zibert/base/line_source.hpp"
#include "zibert/base/progress.hpp"
#include "zibert/text/synth.hpp"
#include "zibert/text/tokenizer.hpp"

namespace zibert::cli {
namespace {

struct SynthCli {
  SynthOptions synth;
  std::string readings = kDebianUnihanReadings;
  bool readings_given = false;
  std::vector<std::string> corpora;
  std::string out;
  bool progress = false;
  int threads = 0;
};

std::string stem(const std::string& path) {
  std::string name = path.substr(path.find_last_of('/') + 1);
  return name.substr(0, name.find('.'));
}

std::vector<BaseSentence> read_corpora(const std::vector<std::string>& paths, bool force_progress) {
  std::vector<BaseSentence> base;
  for (const std::string& path : paths) {
    LineSource src = LineSource::open(path);
    InputProgress progress(InputProgress::wanted(force_progress, src));
    std::string tag = paths.size() > 1 ? stem(path) : "", line;
    std::int64_t n = 0;
    const std::size_t before = base.size();
    while (src.next(line)) {
      ++n;
      if (n % 4096 == 0) progress.update(src, n);
      std::int64_t bad = invalid_utf8_offset(line);
      if (bad >= 0) throw error_at(path, n, bad + 1, "invalid UTF-8");
      for (char& c : line)
        if (c == '\t') c = ' ';  // a tab would break the TSV row
      if (!line.empty()) base.push_back({line, tag});
    }
    progress.finish(src, n);
    if (base.size() == before) throw Error(path + ": no sentences (the file is empty or every line is blank)");
  }
  return base;
}

std::string to_tsv(const std::vector<SynthExample>& rows) {
  std::string out = "label\ttext\tcategory\n";
  for (const auto& r : rows) out += r.label + "\t" + r.text + "\t" + r.category + "\n";
  return out;
}

int run_synth(const SynthCli& o) {
  apply_threads(o.threads);
  std::vector<NamedPath> inputs;
  for (const std::string& path : o.corpora) inputs.push_back({"--corpus", path});
  for (const char* split : {"/train.tsv", "/dev.tsv", "/test.tsv"}) check_not_an_input({"--out", o.out + split}, inputs);
  std::vector<BaseSentence> base = read_corpora(o.corpora, o.progress);
  // The readings table: the one given, or Debian's when it is installed.
  Readings readings;
  SynthOptions options = o.synth;
  if (o.readings_given || ::access(o.readings.c_str(), R_OK) == 0) {
    readings = Readings::load(o.readings);
    options.readings = &readings;
  } else {
    std::fprintf(stderr, "synth: no readings table at %s (Debian's unicode-data); give --readings\n",
                 o.readings.c_str());
  }
  SynthCorpus corpus = synthesize(base, options);
  if (corpus.train.empty() && corpus.dev.empty() && corpus.test.empty())
    throw Error("synth made no examples from " + std::to_string(base.size()) + " base sentences; give it more text");
  struct stat st {};
  if (::stat(o.out.c_str(), &st) != 0 && ::mkdir(o.out.c_str(), 0755) != 0)
    throw Error(o.out + ": cannot create the output directory");
  write_file_atomic(o.out + "/train.tsv", to_tsv(corpus.train));
  write_file_atomic(o.out + "/dev.tsv", to_tsv(corpus.dev));
  write_file_atomic(o.out + "/test.tsv", to_tsv(corpus.test));
  std::map<std::string, std::int64_t> per_category;
  for (const auto* split : {&corpus.train, &corpus.dev, &corpus.test})
    for (const auto& r : *split) ++per_category[r.category];
  std::fprintf(stderr, "synth: %zu base sentences -> train %zu, dev %zu, test %zu examples in %s/\n", base.size(),
               corpus.train.size(), corpus.dev.size(), corpus.test.size(), o.out.c_str());
  for (const auto& [cat, n] : per_category)
    std::fprintf(stderr, "  %-28s %lld\n", cat.c_str(), static_cast<long long>(n));
  for (const std::string& note : corpus.notes) std::fprintf(stderr, "  note: %s\n", note.c_str());
  for (const auto& [why, n] : corpus.skipped)
    std::fprintf(stderr, "  skipped: %s: %lld\n", why.c_str(), static_cast<long long>(n));
  return kExitOk;
}

}  // namespace

Runner setup_synth(CLI::App& app) {
  auto o = std::make_shared<SynthCli>();
  app.footer(
      "Build a labelled corpus for a phrase from unlabelled sentences (one per line):\n"
      "positives with the phrase or a variant (at the start, middle or end, quoted, spaced,\n"
      "inside longer dish names), and the ways people write it otherwise: a homophone typo\n"
      "(佛跳強) or a near one (佛跳蔷, from z/zh, n/l, an/ang ... confusions), its pinyin\n"
      "(fotiaoqiang, Fo Tiao Qiang) and the --alias names. Hard negatives: permutations,\n"
      "partial phrases (also with a homophone, or in pinyin), one character replaced by one\n"
      "that does not sound like it, the characters scattered apart, near-miss words, the\n"
      "phrase inside a --not-inside word; and plain negatives. Homophones come from Unicode's\n"
      "Unihan readings (Debian's unicode-data), weighted toward the characters common in the\n"
      "corpus. Writes OUT/train.tsv, dev.tsv and test.tsv with a category column. Base\n"
      "sentences are split between train/dev/test before anything is inserted; with several\n"
      "corpora the category is suffixed with the corpus file's name.\n\n"
      "Example:\n  zibert synth --phrase 佛跳墙 --variant 佛跳牆 --near-miss 狗急跳墙,仿佛 --pinyin 'fo tiao qiang' \\\n"
      "      --alias 'Buddha Jumps Over the Wall' \\\n"
      "      --corpus simplified.txt --corpus traditional.txt --out fotiaoqiang/\n\n"
      "zibert-detect-train (scripts/detect-train in the source tree) does the whole recipe for a phrase:\n"
      "a cached Chinese base corpus, opencc's variants, synth, train, calibration and a report.");
  app.add_option("--phrase", o->synth.phrase, "The target phrase")->required();
  app.add_option("--variant", o->synth.variants, "Another spelling that counts as the phrase (repeatable)")
      ->delimiter(',');
  app.add_option("--near-miss", o->synth.near_misses, "A word that must stay negative (repeatable, or comma-separated)")
      ->delimiter(',');
  app.add_option("--separator", o->synth.separators,
                 "Another separator spaced forms may put between the phrase's characters, beside space and ·: "
                 "one to three characters, no letter or digit (repeatable: --separator - --separator '--' "
                 "--separator ' . ')");
  app.add_option("--dish", o->synth.dish_forms, "A longer name around the phrase, {} marks it: 一锅{} (repeatable)")
      ->delimiter(',');
  app.add_option("--alias", o->synth.aliases,
                 "Another name or a translation that counts as the phrase, used in all the forms the phrase takes "
                 "(repeatable: --alias 福寿全 --alias 'Buddha Jumps Over the Wall')");
  app.add_option("--pinyin", o->synth.pinyin,
                 "The phrase's reading, a syllable per character, tones optional (--pinyin 'fo tiao qiang'; "
                 "with tone marks, 'fó tiào qiáng', the marked spellings are written too; a character "
                 "read two ways, 'fo/fu tiao qiang': the first is spelt, each gives homophones); "
                 "default: each character's readings today (kMandarin, kXHC1983). Negatives avoid every reading "
                 "the table has, kHanyuPinyin's old ones too")
      ->delimiter(' ');
  app.add_option("--not-inside", o->synth.not_inside,
                 "A string that, right before or after a match, makes it no mention: 红烧肉丸子汤 with "
                 "--not-inside 丸子 (repeatable, or comma-separated)")
      ->delimiter(',');
  app.add_option("--readings", o->readings,
                 "Unihan_Readings.txt, plain or bzip2, where homophones come from (kMandarin, kHanyuPinyin, "
                 "kXHC1983)")
      ->capture_default_str()
      ->each([o](const std::string&) { o->readings_given = true; });
  app.add_option("--hold-out", o->synth.held_out,
                 "Characters never generated as homophones, to measure forms not taught (repeatable: --hold-out 強蔷)");
  app.add_option("--homophone-share", o->synth.homophone_share,
                 "Share of the positives with one character replaced by a homophone (佛跳強); 0 turns it off")
      ->check(finite_range(0.0, 0.9))->capture_default_str();
  app.add_option("--near-homophone-share", o->synth.near_homophone_share,
                 "Share with one character one usual confusion away (z/zh c/ch s/sh n/l f/h an/ang en/eng in/ing)")
      ->check(finite_range(0.0, 0.9))->capture_default_str();
  app.add_flag("--initials", o->synth.pinyin_initials,
               "pos-pinyin also writes the syllables' first letters (FTQ, ftq; off by default: three capitals "
               "are close to many abbreviations, FTP and FAQ among them)");
  app.add_option("--pinyin-share", o->synth.pinyin_share,
                 "Share with the reading in Latin letters (fotiaoqiang, Fo Tiao Qiang)")
      ->check(finite_range(0.0, 0.9))->capture_default_str();
  app.add_option("--alias-share", o->synth.alias_share, "Share with an alias in the phrase's place (with --alias)")
      ->check(finite_range(0.0, 0.9))->capture_default_str();
  app.add_option("--corpus", o->corpora, "Unlabelled sentences, one per line (repeatable)")->required();
  app.add_option("--out", o->out, "Output directory (created if missing)")->required();
  app.add_flag("--progress", o->progress,
               "Show progress reading each corpus on stderr (bytes of the file, lines/s, ETA) even when stderr is "
               "not a terminal (on a terminal it is shown anyway)");
  app.add_option("--seed", o->synth.seed, "Random seed")->check(CLI::NonNegativeNumber)->capture_default_str();
  app.add_option("--dev-fraction", o->synth.dev_fraction, "Share of base sentences for dev")
      ->check(finite_range(0.0, 0.5))->capture_default_str();
  app.add_option("--test-fraction", o->synth.test_fraction, "Share of base sentences for test")
      ->check(finite_range(0.0, 0.5))->capture_default_str();
  app.add_option("--copies", o->synth.copies, "Examples generated per base sentence")
      ->check(CLI::Range(1, 100))->capture_default_str();
  add_threads_option(app, o->threads);
  return [o] { return run_synth(*o); };
}

}  // namespace zibert::cli
