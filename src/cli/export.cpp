// zibert export --hf: a model as a Hugging Face checkpoint directory
// (model/hf_export.hpp) for transformers' from_pretrained.
#include <cstdio>

#include "cli.hpp"
#include "zibert/base/io.hpp"
#include "zibert/model/hf_export.hpp"

namespace zibert::cli {
namespace {

struct ExportCli {
  std::string model, hf;
  bool quiet = false;
};

int run_export(const ExportCli& o) {
  const std::string path = resolve_model_path(o.model, o.quiet);
  const Model model = load_model(path);
  export_hf_checkpoint(model, o.hf);
  if (!o.quiet) {
    std::fprintf(stderr, "wrote %s/: config.json, vocab.txt, tokenizer_config.json%s, model.safetensors (%s)\n",
                 o.hf.c_str(), model.tokenizer.kind() == TokenizerKind::character ? ", tokenizer.json" : "",
                 model.config.task == Task::classify ? "BertForSequenceClassification" : "BertForMaskedLM");
    if (model.classifier.calibration)
      std::fprintf(stderr, "the calibration temperature %.4g is folded into the classifier's weights and bias\n",
                   model.classifier.calibration->temperature);
    if (model.tokenizer.kind() == TokenizerKind::character)
      std::fprintf(stderr, "tokenizer.json gives zibert's character ids to PreTrainedTokenizerFast; BertTokenizer reads "
                           "vocab.txt with WordPiece, which differs beyond Chinese text (docs/howto/chinese-bert.md)\n");
  }
  return kExitOk;
}

}  // namespace

Runner setup_export(CLI::App& app) {
  auto o = std::make_shared<ExportCli>();
  app.footer(
      "Export a model as a Hugging Face checkpoint directory: config.json (with id2label), vocab.txt,\n"
      "tokenizer_config.json and model.safetensors under transformers' names. A classifier loads as\n"
      "BertForSequenceClassification, an encoder as BertForMaskedLM or BertModel. A calibration temperature is\n"
      "folded into the classifier; how windows combine is kept under \"zibert\" in config.json (transformers\n"
      "ignores it). int8 models, tied query/key projections and models without positions are refused.\n\n"
      "Example:\n"
      "  zibert export --hf senti-hf/ -m senti.safetensors\n"
      "  python3 -c 'import transformers as t; t.BertForSequenceClassification.from_pretrained(\"senti-hf\")'  # needs transformers");
  add_model_option(app, o->model);
  app.add_option("--hf", o->hf, "The directory to write (made if missing)")->required();
  app.add_flag("-q,--quiet", o->quiet, "Print nothing on success");
  return [o] { return run_export(*o); };
}

}  // namespace zibert::cli
