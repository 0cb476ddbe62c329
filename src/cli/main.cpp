// zibert: a character-level BERT text classifier for the shell.
#include <malloc.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <exception>
#include <map>

#include "cli.hpp"
#include "run_control.hpp"
#include "zibert/base/world.hpp"

namespace {

// An error ends this process with status 2; over MPI it ends every rank at
// once, as the others may be waiting for this one in a collective.
int fail(const char* message) {
  const zibert::World& world = zibert::World::get();
  std::fflush(stdout);
  if (!world.distributed()) {
    std::fprintf(stderr, "zibert: error: %s\n", message);
    return zibert::cli::kExitError;
  }
  std::fprintf(stderr, "zibert: error on rank %d of %d: %s\n", world.rank(), world.size(), message);
  world.abort(zibert::cli::kExitError);
}

// What went through stdio or iostreams reaches standard output, or the run
// fails: a full disk or a closed pipe must not end in exit status 0 with the
// results lost (zibert eval --json > /dev/full).
int flush_stdout(int status) {
  std::cout.flush();
  errno = 0;
  const bool flushed = std::fflush(stdout) == 0;
  const int err = errno;
  if (flushed && std::cout.good() && !std::ferror(stdout)) return status;
  if (err)
    std::fprintf(stderr, "zibert: error: write error on standard output: %s\n", std::strerror(err));
  else
    std::fputs("zibert: error: write error on standard output\n", stderr);
  return zibert::cli::kExitError;
}

int run_command(int argc, char** argv) {
  using namespace zibert::cli;
  // Large temporaries (Eigen's products and expression temporaries, growing
  // buffers) stay on the heap instead of fresh mmap()s, whose page faults cost
  // a training step ~4 % (perf) while Eigen did every product; zibert's own
  // product keeps per-thread packing buffers.
  mallopt(M_MMAP_THRESHOLD, 256 << 20);
  mallopt(M_TRIM_THRESHOLD, 512 << 20);
  // A file-size limit (ulimit -f) makes a write fail with EFBIG, reported like
  // a full disk, instead of killing the process mid-write.
  std::signal(SIGXFSZ, SIG_IGN);
  CLI::App app{"zibert: a character-level BERT text classifier.\n\n"
               "  zibert classify notes.txt\n"
               "  zibert train --data train.tsv --dev dev.tsv --out my.safetensors\n"
               "  zibert eval -m my.safetensors --data test.tsv\n"};
  app.name("zibert");  // not argv[0]: the help reads the same however the program was started
  app.set_version_flag("--version", std::string("zibert ") + ZIBERT_VERSION);
  app.require_subcommand(1);
  std::map<CLI::App*, Runner> runners;
  struct Command {
    const char* name;
    const char* help;
    const char* example;
    Runner (*setup)(CLI::App&);
  };
  const Command commands[] = {
      {"train", "Train a classifier on labelled text",
       "zibert train --data train.tsv --dev dev.tsv --out my.safetensors", setup_train},
      {"pretrain", "Pretrain an encoder on raw text (masked language model)",
       "zibert pretrain --text corpus.txt --out enc.safetensors", setup_pretrain},
      {"distill", "Train a small fast classifier on a big one's answers",
       "zibert distill --teacher big.safetensors --text unlabelled.txt --data train.tsv --out small.safetensors",
       setup_distill},
      {"classify", "Classify each line of files or stdin", "zibert classify notes.txt", setup_classify},
      {"embed", "Print one vector per line of files or stdin", "zibert embed notes.txt",
       setup_embed},
      {"tokenize", "Print the tokens a model reads each line as", "zibert tokenize -m fotiaoqiang notes.txt",
       setup_tokenize},
      {"fill-mask", "An encoder's guesses for each [MASK] in a text",
       "zibert fill-mask -m zh-encoder '请输入密[MASK]。'", setup_fill_mask},
      {"eval", "Score a model on labelled data", "zibert eval -m my.safetensors --data test.tsv", setup_eval},
      {"info", "Describe a model file", "zibert info -m my.safetensors", setup_info},
      {"import", "Import a Hugging Face BERT checkpoint directory",
       "zibert import rbt3/ --out rbt3.safetensors", setup_import},
      {"export", "Write a model as a Hugging Face checkpoint directory",
       "zibert export --hf senti-hf/ -m senti.safetensors", setup_export},
      {"quantize", "Convert a model to int8 for faster inference",
       "zibert quantize -m my.safetensors --out my.int8.safetensors", setup_quantize},
      {"calibrate", "Fit a model's probability temperature on held-out data",
       "zibert calibrate -m my.safetensors --data dev.tsv --out my.safetensors", setup_calibrate},
      {"variants", "Read characters a model lacks as variants it has (仏 as 佛)",
       "zibert variants -m my.safetensors --table variants.tsv --out my.safetensors", setup_variants},
      {"synth", "Build a labelled corpus for a phrase from plain sentences",
       "zibert synth --phrase 小笼包 --corpus sentences.txt --out xlb/", setup_synth},
      {"explain", "Show the attention and occlusion behind one prediction", "zibert explain '他们点了一坛佛跳墙'",
       setup_explain},
      {"plot", "Draw training curves from a train --log file", "zibert plot train.jsonl --svg curves.svg",
       setup_plot},
      {"bench", "Measure training and inference speed of a model shape", "zibert bench --int8", setup_bench},
  };

  for (const Command& c : commands) {
    CLI::App* sub = app.add_subcommand(c.name, c.help);
    runners[sub] = c.setup(*sub);
  }
  if (argc == 1) {  // no command: what there is, and how each starts
    std::string list = "zibert: a character-level BERT text classifier. Commands:\n";
    for (const Command& c : commands) {
      char row[512];
      std::snprintf(row, sizeof row, "  %-10s %s\n  %-10s   %s\n", c.name, c.help, "", c.example);
      list += row;
    }
    list += "Run 'zibert COMMAND --help' for a command's options.\n";
    std::fputs(list.c_str(), stderr);
    return kExitError;
  }
  std::string names;
  bool known = false;
  for (const CLI::App* sub : app.get_subcommands({})) {
    names += (names.empty() ? "" : ", ") + sub->get_name();
    known = known || (argc > 1 && sub->get_name() == argv[1]);
  }
  if (argc > 1 && argv[1][0] != '-' && !known) {
    std::fprintf(stderr, "zibert: error: unknown command '%s' (commands: %s)\n", argv[1], names.c_str());
    return kExitError;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {  // on one rank only, if a flag's file exists there alone
    return fail(e.what());
  }
  const zibert::World& world = zibert::World::get();
  try {
    if (world.distributed()) check_ranks_agree(argc, argv);
    for (auto& [sub, run] : runners)
      if (sub->parsed()) return run();
    return kExitError;
  } catch (const std::exception& e) {
    return fail(e.what());
  }
}

}  // namespace

int main(int argc, char** argv) {
  try {
    zibert::World::init(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "zibert: error: %s\n", e.what());
    return zibert::cli::kExitError;
  }
  const int status = flush_stdout(run_command(argc, argv));
  zibert::World::finalize();
  return status;
}
