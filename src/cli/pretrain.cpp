// zibert pretrain: raw text in, an encoder (BERT's masked-LM) out.
#include "cli.hpp"
#include "run_control.hpp"

namespace zibert::cli {

Runner setup_pretrain(CLI::App& app) {
  auto o = std::make_shared<PretrainRequest>();
  o->holdout = 0.05;
  o->train.adam.lr = 1e-3;  // what the shipped encoder and the study pretrain with
  o->train.batch = kPretrainBatch;
  o->train.shape.max_len = 128;
  app.footer(
      "Pretrain an encoder on raw text with BERT's masked-language-model objective:\n"
      "15% of the characters are chosen (80% [MASK], 10% random, 10% kept) and predicted.\n"
      "Text: UTF-8, one text per line; consecutive lines are packed into max-len sequences.\n"
      "Fine-tune the encoder with: zibert train --init ENCODER --data ...\n\n"
      "Example:\n  zibert pretrain --text corpus.txt --out enc.safetensors --epochs 10");
  app.add_option("--text", o->texts, "Raw text file, one text per line (repeat for more; required unless --resume)")
      ->check(CLI::ExistingFile);
  CLI::Option* dev = app.add_option("--dev-text", o->dev, "Held-out text scored each epoch (default: a seeded "
                                                          "hold-out of the first --text)")
                         ->check(CLI::ExistingFile);
  app.add_option("--holdout", o->holdout, "Fraction of the first --text's lines held out when --dev-text is absent")
      ->check(finite_range(0.001, 0.5))->capture_default_str()->excludes(dev);
  app.add_option("--out", o->out, "Encoder file to write (safetensors; required unless --resume)");
  CLI::Option* resume = add_checkpoint_options(app, o->checkpoint, o->resume);
  add_fault_injection_options(app, o->faults);
  CLI::Option* init = app.add_option("--init", o->init, "Continue from this encoder (or a classifier's encoder, with "
                                     "a fresh head): its vocabulary and shape, so shape flags are refused; a file or a shipped "
                                     "model's name")
                          ->transform([](std::string name) { return find_model(name); })
                          ->check(CLI::ExistingFile);
  add_shape_options(app, o->train.shape, init);
  add_optimizer_options(app, o->train);
  CLI::Option* min_count = app.add_option("--min-count", o->train.min_count, "Keep characters seen at least this often")
                               ->check(CLI::Range(1, 1000000))->capture_default_str();
  CLI::Option* vocab_size = app.add_option("--vocab-size", o->train.max_vocab, "At most this many token ids, the "
                                           "specials included: the most frequent characters (0 = all)")
                                ->check(CLI::Range(std::int64_t(0), std::int64_t(10'000'000)))->capture_default_str();
  CLI::Option* from = app.add_option("--vocab-from", o->vocab_from, "Take the vocabulary of this file: one character "
                                     "per line, or a zibert model (so the encoder fits a later task)")
                          ->check(CLI::ExistingFile);
  CLI::Option* lowercase = app.add_flag("--lowercase", o->train.lowercase, "Case-fold text (stored in the model)");
  from->excludes(min_count)->excludes(vocab_size);
  for (CLI::Option* opt : {min_count, vocab_size, from, lowercase}) init->excludes(opt);
  add_threads_option(app, o->threads);
  add_bf16_option(app);
  app.add_flag("-q,--quiet", o->quiet, "No progress output");
  app.add_option("--log", o->train.log_path, "Write one JSON line per epoch (epoch, step, train loss, dev MLM loss "
                                              "and masked-token accuracy, lr, examples/s)");
  resume_excludes_others(app, resume);
  CLI::Option* lr = app.get_option("--lr");
  lr->description("Peak learning rate (--init from an imported Hugging Face model: 5e-5 unless given)");
  return [o, lr] {
    o->lr_given = lr->count() > 0;
    return finish_run(pretrain_run(*o), "pretrain");
  };
}

}  // namespace zibert::cli
