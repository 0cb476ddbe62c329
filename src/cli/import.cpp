// zibert import: a Hugging Face BERT checkpoint directory as a zibert model
// file (model/hf_import.hpp), which every command then takes.
#include <cstdio>

#include "cli.hpp"
#include "zibert/base/io.hpp"
#include "zibert/model/hf_import.hpp"

namespace zibert::cli {
namespace {

struct ImportCli {
  std::string dir, out;
  bool quiet = false;
};

int run_import(const ImportCli& o) {
  check_output_path(o.out);
  const Model model = import_hf_checkpoint(o.dir);
  save_model(o.out, model);
  if (!o.quiet) {
    const ModelConfig& c = model.config;
    const nlohmann::json& origin = model.training["origin"];
    std::fprintf(stderr, "saved %s: %s, %lld layers, dim %lld, %lld heads, ffn %lld, %lld positions, vocabulary %lld (%s)",
                 o.out.c_str(), c.task == Task::classify ? "classifier" : "encoder", (long long)c.layers, (long long)c.dim,
                 (long long)c.heads, (long long)c.ffn, (long long)c.max_len, (long long)c.vocab_size,
                 model.tokenizer.kind() == TokenizerKind::wordpiece ? "WordPiece" : "zibert's characters");
    if (c.task == Task::classify) std::fprintf(stderr, ", %lld labels", (long long)c.labels);
    std::fprintf(stderr, "\n");
    if (!origin["ignored"].empty()) {
      std::string names;
      for (const auto& n : origin["ignored"]) names += (names.empty() ? "" : ", ") + n.get<std::string>();
      std::fprintf(stderr, "not used: %s\n", names.c_str());
    }
    if (origin.value("mlm_head", "").starts_with("initialised"))
      std::fprintf(stderr, "note: the checkpoint has no masked-LM head; fill-mask and pretrain use a freshly "
                           "initialised one (train --init does not need it)\n");
  }
  return kExitOk;
}

}  // namespace

Runner setup_import(CLI::App& app) {
  auto o = std::make_shared<ImportCli>();
  app.footer(
      "Import a Hugging Face BERT checkpoint directory (config.json, vocab.txt, the tokenizer's settings and\n"
      "model.safetensors or pytorch_model.bin, sharded or not) as a zibert model: bert-base-chinese, HFL's\n"
      "RoBERTa-wwm-ext, RBT3, MiniRBT, MacBERT, UER's miniatures and every other model_type \"bert\".\n"
      "A BertForSequenceClassification becomes a classifier with its labels; any other BERT an encoder, which\n"
      "train --init fine-tunes (lr 3e-5, 3 epochs, batch 32, warmup 0.1 unless given) and fill-mask reads.\n"
      "Inputs are one segment (token type 0). pytorch_model.bin is read without running its pickle: only a\n"
      "state dict of tensors is accepted. What zibert cannot compute exactly is refused by name.\n\n"
      "Example:\n"
      "  zibert import rbt3/ --out rbt3.safetensors\n"
      "  zibert train --init rbt3.safetensors --data train.tsv --dev dev.tsv --out senti.safetensors");
  app.add_option("dir", o->dir, "The checkpoint directory")->required();
  app.add_option("--out", o->out, "Where to write the zibert model")->required();
  app.add_flag("-q,--quiet", o->quiet, "Print nothing on success");
  return [o] { return run_import(*o); };
}

}  // namespace zibert::cli
