// zibert distill: a big model's answers taught to a small model.
#include "cli.hpp"
#include "run_control.hpp"

namespace zibert::cli {

Runner setup_distill(CLI::App& app) {
  auto o = std::make_shared<DistillRequest>();
  app.footer(
      "Train a small, fast classifier (the student) on a big one's answers (the teacher): knowledge\n"
      "distillation. The teachers label every text of --text and --data once (kept in OUT.teacher-logits,\n"
      "reused while the teachers and texts stay the same); the student learns their probabilities at\n"
      "--temperature, plus the gold labels of --data weighted by --alpha. Several --teacher files make an\n"
      "ensemble: the mean of their probabilities. Teachers and student may read text differently (an\n"
      "imported WordPiece BERT teaching a character model): only the text and the answers pass between them.\n\n"
      "Example:\n"
      "  zibert distill --teacher big.safetensors --text unlabelled.txt --data train.tsv --dev dev.tsv \\\n"
      "                 --init zh-encoder --out small.safetensors");
  app.add_option("--teacher", o->teachers, "A classifier to learn from (repeat for an ensemble); a file or a "
                                            "shipped model's name")
      ->transform([](std::string name) { return find_model(name); })
      ->check(CLI::ExistingFile);
  app.add_option("--text", o->texts, "Unlabelled texts, one per line (repeat): the teachers label them")
      ->check(CLI::ExistingFile);
  app.add_option("--data", o->data, "Labelled data (as train reads it): its texts are labelled by the teachers "
                                    "too, and its gold labels count with weight --alpha; - for stdin")
      ->check(file_or_stdin());
  CLI::Option* dev = app.add_option("--dev", o->dev, "Labelled dev data: the student's best epoch and "
                                                     "calibration (default: a seeded 10% hold-out of --data)")
                         ->check(CLI::ExistingFile);
  app.add_option("--holdout", o->holdout, "Dev fraction held out of --data when --dev is absent")
      ->check(finite_range(0.01, 0.5))->capture_default_str()->excludes(dev);
  app.add_option("--out", o->out, "Student model file to write (safetensors; required unless --resume)");
  app.add_option("--cache", o->cache, "Where to keep the teachers' logits (default OUT.teacher-logits)");
  app.add_option("--temperature", o->temperature, "Distillation temperature T: both distributions are softened by "
                                                   "it, and the soft loss is scaled by T²")
      ->check(finite_range(0.05, 100.0))->capture_default_str();
  app.add_option("--alpha", o->alpha, "Weight of the gold labels' cross-entropy next to the soft loss")
      ->check(finite_range(0.0, 100.0))->capture_default_str();
  CLI::Option* augment =
      app.add_option("--augment", o->augment, "Make this many new texts from each --data text for the teachers to "
                                              "label (for when unlabelled text is scarce): 15 % of its characters "
                                              "deleted, or replaced with --augment-with")
          ->check(CLI::Range(std::int64_t(0), std::int64_t(100)))->capture_default_str();
  app.add_option("--augment-with", o->augment_with, "A character encoder (zibert pretrain's, zh-encoder) whose "
                                                     "fill-mask guesses (one of its top 8) replace the chosen characters")
      ->transform([](std::string name) { return find_model(name); })
      ->check(CLI::ExistingFile)
      ->needs(augment);
  CLI::Option* resume = add_checkpoint_options(app, o->checkpoint, o->resume);
  add_fault_injection_options(app, o->faults);
  CLI::Option* init = app.add_option("--init", o->init, "Start the student from this encoder's (or classifier's) "
                                     "weights and vocabulary (its shape too: shape flags are refused); a file or a "
                                     "shipped model's name (zh-encoder)")
                          ->transform([](std::string name) { return find_model(name); })
                          ->check(CLI::ExistingFile);
  add_shape_options(app, o->train.shape, init);
  add_optimizer_options(app, o->train);
  app.add_option("--min-count", o->train.min_count, "Keep characters seen at least this often (a student without "
                                                    "--init builds its vocabulary from the texts)")
      ->check(CLI::Range(1, 1000000))->capture_default_str()->excludes(init);
  app.add_flag("--lowercase", o->train.lowercase, "Case-fold text (stored in the model)")->excludes(init);
  app.add_flag("--extend-vocab", o->train.extend_vocab,
               "With --init: give the texts' characters that the starting model lacks rows of their own")
      ->needs(init);
  add_classifier_run_options(app, *o, o->no_calibration);
  resume_excludes_others(app, resume);
  CLI::Option* lr = app.get_option("--lr");
  lr->description("Peak learning rate (a student from an encoder, --init ENCODER: 3e-4 unless given)");
  return [o, lr] {
    o->lr_given = lr->count() > 0;
    return finish_run(distill_run(*o), "distill");
  };
}

}  // namespace zibert::cli
