// zibert train: labelled data in, model file out.
#include "cli.hpp"
#include "run_control.hpp"

namespace zibert::cli {

Runner setup_train(CLI::App& app) {
  auto o = std::make_shared<TrainRequest>();
  o->pretrain_batch = kPretrainBatch;
  app.footer(
      "Train a classifier on labelled text.\n"
      "Data: TSV label<TAB>text[<TAB>category] (optional header naming the columns),\n"
      "fastText '__label__X text', or JSONL {\"text\":…,\"label\":…}; detected by content.\n"
      "Multi-label (--multi-label): 'a,b<TAB>text', '__label__a __label__b text', {\"label\":[\"a\",\"b\"],…}.\n\n"
      "Example:\n  zibert train --data train.tsv --dev dev.tsv --out my.safetensors --epochs 5");
  app.add_option("--data", o->data, "Training data file, or - for stdin, read once (required unless --resume)")
      ->check(file_or_stdin());
  CLI::Option* dev =
      app.add_option("--dev", o->dev, "Dev data (default: a seeded 10% hold-out of --data)")->check(CLI::ExistingFile);
  app.add_option("--holdout", o->holdout, "Dev fraction held out when --dev is absent")->check(finite_range(0.01, 0.5))
      ->capture_default_str()
      ->excludes(dev);
  app.add_option("--out", o->out, "Model file to write (safetensors; required unless --resume)");
  CLI::Option* resume = add_checkpoint_options(app, o->checkpoint, o->resume);
  add_fault_injection_options(app, o->faults);
  CLI::Option* init = app.add_option("--init", o->init, "Start from this model's weights, vocabulary and labels "
                                     "(its shape too: shape flags are refused); a file or a shipped model's name (zh-encoder)")
                          ->transform([](std::string name) { return find_model(name); })
                          ->check(CLI::ExistingFile);
  add_shape_options(app, o->train.shape, init);
  add_optimizer_options(app, o->train);
  CLI::Option* pre = app.add_option("--pretrain-epochs", o->pretrain_epochs, "First pretrain an encoder (masked LM, "
                                    "as zibert pretrain) on the training texts for this many epochs, then fine-tune it")
                         ->check(CLI::Range(std::int64_t(0), std::int64_t(100000)))->capture_default_str();
  pre->excludes(init);
  app.add_option("--pretrain-text", o->pretrain_texts, "More raw text for that pretraining, one text per line (repeat)")
      ->check(CLI::ExistingFile)->needs(pre);
  app.add_option("--pretrain-lr", o->pretrain_lr, "Peak learning rate of the pretraining")
      ->check(finite_range(0.0, 10.0))->capture_default_str()->needs(pre);
  app.add_option("--pretrain-batch", o->pretrain_batch, "Sequences per pretraining step")
      ->check(CLI::Range(1, 65536))->capture_default_str()->needs(pre);
  CLI::Option* min_count =
      app.add_option("--min-count", o->train.min_count,
                     "Keep characters seen at least this often (with --init: those --extend-vocab adds)")
          ->check(CLI::Range(1, 1000000))->capture_default_str();
  // --init's model brings its own normalisation.
  app.add_flag("--lowercase", o->train.lowercase, "Case-fold text (stored in the model)")->excludes(init);
  app.add_flag("--extend-vocab", o->train.extend_vocab,
               "With --init: give the data's characters that the starting model lacks rows of their own "
               "(initialised as for training) instead of reading them as [UNK]");
  app.add_flag("--multi-label", o->train.shape.multi_label,
               "Train one sigmoid per label with binary cross-entropy (fastText's -loss ova): a text may carry "
               "several labels (several __label__ words, a JSON list, or comma-separated in TSV) or none ([] in "
               "JSONL); classify prints every label with P >= --threshold");
  app.add_option("--label-smoothing", o->train.label_smoothing,
                 "Label smoothing ε: train towards (1 − ε) on the label and ε/K on every label, not 1 on the label "
                 "(bounds the logits; single-label models)")
      ->check(finite_range(0.0, 0.5))->capture_default_str();
  app.add_option("--outliers", o->outliers,
                 "Texts that belong to none of the labels, one per line (repeat): trained towards the uniform "
                 "distribution over the labels, so that inputs like them get unsure probabilities (outlier "
                 "exposure; single-label models)")
      ->check(CLI::ExistingFile);
  app.add_option("--positive", o->train.positive, "Positive label of a binary model (default: 1/true/yes/pos)");
  add_classifier_run_options(app, *o, o->no_calibration);
  resume_excludes_others(app, resume);
  CLI::Option* lr = app.get_option("--lr");
  lr->description("Peak learning rate (fine-tuning an encoder, --init ENCODER or --pretrain-epochs: 3e-4 unless given; "
                  "an imported Hugging Face model: 3e-5)");
  CLI::Option* epochs = app.get_option("--epochs");
  CLI::Option* batch = app.get_option("--batch");
  CLI::Option* warmup = app.get_option("--warmup");
  epochs->description("Passes over the data (an imported Hugging Face model: 3 unless given)");
  batch->description("Sequences per step (an imported Hugging Face model: 32 unless given)");
  warmup->description("Fraction of steps with linear warmup (an imported Hugging Face model: 0.1 unless given)");
  return [o, lr, min_count, epochs, batch, warmup] {
    o->lr_given = lr->count() > 0;
    o->epochs_given = epochs->count() > 0;
    o->batch_given = batch->count() > 0;
    o->warmup_given = warmup->count() > 0;
    o->min_count_given = min_count->count() > 0;
    return finish_run(train_run(*o), "train");
  };
}

}  // namespace zibert::cli
