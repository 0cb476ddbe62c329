// zibert: a character-level BERT text classifier for the shell.
#include <malloc.h>

#include <csignal>
#include <cstdio>
#include <exception>
#include <map>

#include "cli.hpp"

int main(int argc, char** argv) {
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
               "  zibert eval -m my.safetensors --data test.tsv"};
  app.set_version_flag("--version", std::string("zibert ") + ZIBERT_VERSION);
  app.require_subcommand(1);
  std::map<CLI::App*, Runner> runners;
  auto add = [&](const char* name, const char* help, Runner (*setup)(CLI::App&)) {
    CLI::App* sub = app.add_subcommand(name, help);
    runners[sub] = setup(*sub);
  };
  add("train", "Train a classifier on labelled text", setup_train);
  add("pretrain", "Pretrain an encoder on raw text (masked language model)", setup_pretrain);
  add("classify", "Classify each line of files or stdin", setup_classify);
  add("embed", "Print one vector per line of files or stdin", setup_embed);
  add("fill-mask", "An encoder's guesses for each [MASK] in a text", setup_fill_mask);
  add("eval", "Score a model on labelled data", setup_eval);
  add("info", "Describe a model file", setup_info);
  add("quantize", "Convert a model to int8 for faster inference", setup_quantize);
  add("synth", "Build a labelled corpus for a phrase from plain sentences", setup_synth);
  add("explain", "Show the attention and occlusion behind one prediction", setup_explain);
  add("plot", "Draw training curves from a train --log file", setup_plot);
  add("bench", "Measure training and inference speed of a model shape", setup_bench);
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
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "zibert: error: %s\n", e.what());
    return kExitError;
  }
  try {
    for (auto& [sub, run] : runners)
      if (sub->parsed()) return run();
    return kExitError;
  } catch (const std::exception& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "zibert: error: %s\n", e.what());
    return kExitError;
  }
}
