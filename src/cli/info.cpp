// zibert info: what a model file holds.
#include <cstdio>

#include "cli.hpp"
#include "zibert/nn/qgemm.hpp"
#include "zibert/text/variants.hpp"

namespace zibert::cli {
namespace {

struct InfoCli {
  std::string model;
  bool json = false;
  int threads = 0;
};

int run_info(const InfoCli& o) {
  apply_threads(o.threads);
  std::string path = resolve_model_path(o.model);
  Model m = load_model(path);
  const ModelConfig& c = m.config;
  std::size_t params = m.net.params().size();
  nlohmann::ordered_json j;
  j["file"] = path;
  j["format_version"] = kFormatVersion;
  j["config"] = config_to_json(c);  // the model file's own form of it, the readings' table counted
  if (c.readings) j["config"]["readings"] = {{"syllables", c.readings->syllables.size()}};
  j["parameters"] = params;
  j["task"] = task_name(c.task);
  j["labels"] = m.classifier.labels;
  j["positive_label"] = m.classifier.positive;
  const WordPiece* wp = m.tokenizer.wordpiece();
  j["tokenizer"] = tokenizer_kind_name(m.tokenizer.kind());
  if (wp) j["wordpiece"] = wordpiece_to_json(wp->options());
  j["lowercase"] = wp ? wp->options().lowercase : m.tokenizer.normalization().lowercase;
  j["variants"] = m.tokenizer.vocab().variants().size();
  if (c.task == Task::classify) {
    j["windows"] = windows_name(m.classifier.window_combine());
    j["windows_recorded"] = m.classifier.windows.has_value();
  }
  if (m.quantization) {
    j["quantization"] = quantization_metadata(*m.quantization);
    j["quantization"]["int8_isa"] = int8_isa_name(int8_isa());
  }
  j["dtype"] = m.quantization ? "int8" : m.float16 ? "float16" : "float32";  // how the weights are stored
  j["training"] = m.training;
  j["calibration"] = m.classifier.calibration ? m.classifier.calibration->to_json() : nlohmann::json(nullptr);
  if (o.json) {
    std::string out = j.dump(2) + "\n";
    std::fwrite(out.data(), 1, out.size(), stdout);
    return kExitOk;
  }
  std::printf("file        %s\n", path.c_str());
  std::printf("model       %s, %lld layers, %lld heads, dim %lld, ffn %lld, max-len %lld\n",
              c.task == Task::mlm ? "BERT encoder (masked-LM head; fine-tune with train --init)"
              : c.multi_label     ? "BERT multi-label classifier (one sigmoid per label)"
                                  : "BERT classifier",
              static_cast<long long>(c.layers), static_cast<long long>(c.heads), static_cast<long long>(c.dim),
              static_cast<long long>(c.ffn), static_cast<long long>(c.max_len));
  if (c.tie_qk || !c.position)
    std::printf("ablation    %s%s\n", c.tie_qk ? "shared Q = K " : "", c.position ? "" : "no position embeddings");
  if (m.quantization) {
    std::size_t int8 = 0;
    for (const auto& [name, t] : m.quantization->tensors) int8 += t.values.size();
    std::printf("parameters  %zu: %zu int8 in %zu matrices (one float32 scale per row), %zu float32\n", params, int8,
                m.quantization->tensors.size(), params - int8);
    std::printf("int8        %s; activations quantized per row at inference, products on %s\n",
                kQuantizationScheme, int8_isa_name(int8_isa()));
  } else if (m.float16) {
    std::printf("parameters  %zu (%.2f MB as F16: stored in half precision, computed in float32)\n", params,
                double(params) * 2 / 1e6);
  } else {
    std::printf("parameters  %zu (%.2f MB as F32)\n", params, double(params) * 4 / 1e6);
  }
  if (wp)
    std::printf("vocab       %lld tokens, BERT's WordPiece (%s, %s%s)\n", static_cast<long long>(c.vocab_size),
                wp->options().lowercase ? "lower-cased" : "cased",
                wp->options().strips_accents() ? "accents stripped" : "accents kept",
                wp->options().handle_chinese_chars ? ", CJK characters split" : "");
  else
    std::printf("vocab       %lld tokens (5 special), NFKC%s\n", static_cast<long long>(c.vocab_size),
                m.tokenizer.normalization().lowercase ? ", case-folded" : "");
  if (const auto& variants = m.tokenizer.vocab().variants(); !variants.empty())
    std::printf("variants    %zu characters without a row read as a variant's (%s; zibert variants)\n",
                variants.size(), variants_sample(variants).c_str());
  if (c.readings) {
    std::size_t read = 0;
    for (const auto& rows : c.readings->of_token) read += !rows.empty();
    std::printf("readings    %zu syllables: %zu tokens add their readings' embeddings to their own (reading channel)\n",
                c.readings->syllables.size(), read);
  }
  if (c.task == Task::classify) {
    std::string labels;
    for (const auto& l : m.classifier.labels) labels += (labels.empty() ? "" : ", ") + l;
    std::printf("windows     %s%s\n", windows_name(m.classifier.window_combine()),
                m.classifier.windows ? "" : " (not recorded: this model predates train --windows)");
    std::printf("labels      %s%s\n", labels.c_str(),
                m.classifier.positive.empty() ? "" : (" (positive: " + m.classifier.positive + ")").c_str());
  }
  const nlohmann::json& t = m.training;
  if (t.contains("train_examples")) {
    std::printf("trained on  %s: %lld examples, dev %s: %lld examples\n", t.value("data", "?").c_str(),
                t.value("train_examples", 0LL), t.value("dev", "?").c_str(), t.value("dev_examples", 0LL));
    if (t.contains("distillation") && t["distillation"].is_object()) {
      const nlohmann::json& d = t["distillation"];
      std::string teachers;
      for (const auto& name : d.value("teachers", nlohmann::json::array()))
        teachers += (teachers.empty() ? "" : ", ") + name.get<std::string>();
      std::printf("distilled   from %s (temperature %g, alpha %g); %lld texts, %lld of them with gold labels\n",
                  teachers.c_str(), d.value("temperature", 0.0), d.value("alpha", 0.0), d.value("texts", 0LL),
                  d.value("gold_texts", 0LL));
    }
    if (t.contains("outliers"))
      std::printf("outliers    %lld texts of no label (--outliers), trained towards the uniform distribution\n",
                  t.value("outliers", 0LL));
    if (t.contains("sound_only"))
      std::printf("sound-only  %g of the characters read by their readings alone in training (--sound-only)\n",
                  t.value("sound_only", 0.0));
    const std::string rounds = t.contains("accumulate") ? " x " + std::to_string(t.value("accumulate", 1LL)) + " rounds" : "";
    std::printf("training    %lld epochs, batch %lld%s, lr %g, seed %llu, %lld threads; best epoch %lld\n",
                t.value("epochs", 0LL), t.value("batch", 0LL), rounds.c_str(), t.value("lr", 0.0), t.value("seed", 0ULL),
                t.value("threads", 0LL), t.value("best_epoch", 0LL));
    if (c.multi_label)
      std::printf("dev         exact match %.4f, micro-F1 %.4f, loss %.4f\n", t.value("dev_exact_match", 0.0),
                  t.value("dev_micro_f1", 0.0), t.value("dev_loss", 0.0));
    else
      std::printf("dev         accuracy %.4f, macro-F1 %.4f, loss %.4f\n", t.value("dev_accuracy", 0.0),
                  t.value("dev_macro_f1", 0.0), t.value("dev_loss", 0.0));
    if (m.classifier.calibration)
      std::printf("calibration temperature %.4g (dev NLL %.4f -> %.4f, ECE %.4f -> %.4f)\n", m.classifier.calibration->temperature,
                  m.classifier.calibration->before.nll, m.classifier.calibration->after.nll, m.classifier.calibration->before.ece,
                  m.classifier.calibration->after.ece);
    else if (c.multi_label)
      std::printf("calibration none (multi-label: the sigmoids' own probabilities)\n");
    else if (c.task == Task::classify)
      std::printf("calibration none (raw probabilities: trained before calibration, or --no-calibration)\n");
    if (t.contains("train_unknown_characters"))
      std::printf("[UNK]       %lld of the %lld training characters are not in the vocabulary\n",
                  t.value("train_unknown_characters", 0LL), t.value("train_characters", 0LL));
    if (t.contains("vocab_added"))
      std::printf("vocab_added %lld characters of the data got rows of their own (train --extend-vocab)\n",
                  t.value("vocab_added", 0LL));
  }
  // An imported checkpoint's origin, or the one the classifier was fine-tuned from.
  const nlohmann::json& origin = t.contains("origin") ? t["origin"] : t.value("pretraining", nlohmann::json::object()).value("origin", nlohmann::json());
  if (origin.is_object()) {
    std::string arch, files, ignored;
    for (const auto& a : origin.value("architectures", nlohmann::json::array())) arch += (arch.empty() ? "" : ", ") + a.get<std::string>();
    for (const auto& f : origin.value("weights", nlohmann::json::array())) files += (files.empty() ? "" : ", ") + f.get<std::string>();
    for (const auto& n : origin.value("ignored", nlohmann::json::array())) ignored += (ignored.empty() ? "" : ", ") + n.get<std::string>();
    std::printf("imported    Hugging Face checkpoint %s (%s; %s)\n", origin.value("checkpoint", "?").c_str(),
                arch.empty() ? "no architectures" : arch.c_str(), files.c_str());
    if (!ignored.empty()) std::printf("not used    %s\n", ignored.c_str());
    if (origin.contains("mlm_head")) std::printf("mlm head    %s\n", origin.value("mlm_head", "").c_str());
  }
  if (t.contains("imported_defaults") && !t["imported_defaults"].empty())
    std::printf("defaults    %s (for an imported model)\n", t["imported_defaults"].dump().c_str());
  // An encoder's own record, or the one a classifier was fine-tuned from.
  const nlohmann::json& p = c.task == Task::mlm ? t : t.value("pretraining", nlohmann::json::object());
  if (p.value("task", "") == "mlm") {
    std::string texts;
    for (const auto& name : p.value("text", nlohmann::json::array())) texts += (texts.empty() ? "" : ", ") + name.get<std::string>();
    std::printf("%s %s: %lld lines in %lld sequences; %lld epochs, batch %lld, lr %g, seed %llu; best epoch %lld\n",
                c.task == Task::mlm ? "pretrained " : "encoder    ", texts.c_str(), p.value("train_lines", 0LL),
                p.value("train_sequences", 0LL), p.value("epochs", 0LL), p.value("batch", 0LL), p.value("lr", 0.0),
                p.value("seed", 0ULL), p.value("best_epoch", 0LL));
    std::printf("%s masked-token accuracy %.4f, MLM loss %.4f (%lld masked tokens of %s)\n",
                c.task == Task::mlm ? "dev        " : "encoder dev", p.value("dev_mlm_accuracy", 0.0),
                p.value("dev_mlm_loss", 0.0), p.value("dev_masked_tokens", 0LL), p.value("dev", "?").c_str());
  }
  return kExitOk;
}

}  // namespace

Runner setup_info(CLI::App& app) {
  auto o = std::make_shared<InfoCli>();
  app.footer("Describe a model file: shape, parameters, vocabulary, labels, training and dev metrics.\n\n"
                  "Example:\n  zibert info -m my.safetensors");
  add_model_option(app, o->model);
  app.add_flag("--json", o->json, "JSON output");
  add_threads_option(app, o->threads);
  return [o] { return run_info(*o); };
}

}  // namespace zibert::cli
