#include "zibert/model/config.hpp"

#include "zibert/base/error.hpp"

namespace zibert {

const char* task_name(Task t) { return t == Task::mlm ? "mlm" : "classify"; }

Task task_from_name(const std::string& name) {
  if (name == "classify") return Task::classify;
  if (name == "mlm") return Task::mlm;
  throw Error("unknown task \"" + name + "\" (choose classify or mlm)");
}

bool is_encoder_tensor(const std::string& name) { return name.starts_with("bert.embeddings.") || name.starts_with("bert.encoder."); }

void ModelConfig::validate() const {
  auto bad = [](const std::string& what) { throw Error("invalid model config: " + what); };
  if (vocab_size <= 5 || vocab_size > 10'000'000) bad("vocab_size must be in 6..10000000");
  if (max_len < 3 || max_len > 65536) bad("max_len must be in 3..65536");
  if (dim < 1 || dim > 65536) bad("dim must be in 1..65536");
  if (heads < 1 || dim % heads != 0) bad("dim must be a multiple of heads");
  if (ffn < 1 || ffn > 262144) bad("ffn must be in 1..262144");
  if (layers < 1 || layers > 256) bad("layers must be in 1..256");
  if (task == Task::classify && (labels < 2 || labels > 100000)) bad("labels must be in 2..100000");
  if (task == Task::mlm && labels != 0) bad("an encoder (task mlm) has no labels");
  if (task == Task::mlm && multi_label) bad("an encoder (task mlm) has no labels to be multi-label");
  if (!(dropout >= 0.0 && dropout < 1.0)) bad("dropout must be in [0, 1)");
  if (!(layer_norm_eps > 0.0 && layer_norm_eps < 1.0)) bad("layer_norm_eps must be in (0, 1)");
  if (type_vocab_size < 0 || type_vocab_size > 1024) bad("type_vocab_size must be in 0..1024");
  if (type_vocab_size > 0 && !position) bad("token type embeddings come with position embeddings");
  if (readings) {
    if (readings->syllables.empty() || readings->syllables.size() > 100000) bad("readings must name 1..100000 syllables");
    if (static_cast<std::int64_t>(readings->of_token.size()) != vocab_size) bad("readings must list every token's syllables");
    for (const auto& rows : readings->of_token)
      for (std::int32_t r : rows)
        if (r < 0 || static_cast<std::size_t>(r) >= readings->syllables.size()) bad("a token's reading is out of range");
  }
  if (task == Task::classify && (pooler || !tie_decoder))
    bad("pooler and tie_decoder describe an encoder (task mlm); a classifier always has a pooler and no decoder");
  // The whole model must stay far below what could overflow offsets.
  double params = double(vocab_size * (tie_decoder ? 1 : 2) + max_len + type_vocab_size) * dim + double(layers) * (4.0 * dim * dim + 2.0 * dim * ffn);
  if (params > 4e9) bad("more than 4e9 parameters");
}

std::vector<TensorInfo> parameter_layout(const ModelConfig& cfg) {
  std::vector<TensorInfo> out;
  std::size_t offset = 0;
  auto add = [&](const std::string& name, std::vector<std::int64_t> shape) {
    std::size_t size = 1;
    for (auto d : shape) size *= static_cast<std::size_t>(d);
    out.push_back({name, shape, offset, size, shape.size() == 2});
    offset += size;
  };
  const std::int64_t c = cfg.dim, f = cfg.ffn;
  add("bert.embeddings.word_embeddings.weight", {cfg.vocab_size, c});
  if (cfg.position) add("bert.embeddings.position_embeddings.weight", {cfg.max_len, c});
  if (cfg.type_vocab_size > 0) add("bert.embeddings.token_type_embeddings.weight", {cfg.type_vocab_size, c});
  if (cfg.readings) add("bert.embeddings.reading_embeddings.weight", {std::int64_t(cfg.readings->syllables.size()), c});
  add("bert.embeddings.LayerNorm.weight", {c});
  add("bert.embeddings.LayerNorm.bias", {c});
  for (std::int64_t l = 0; l < cfg.layers; ++l) {
    const std::string p = "bert.encoder.layer." + std::to_string(l) + ".";
    // q, k, v weights then biases back to back: one fused (3C, C) product.
    add(p + "attention.self.query.weight", {c, c});
    if (!cfg.tie_qk) add(p + "attention.self.key.weight", {c, c});
    add(p + "attention.self.value.weight", {c, c});
    add(p + "attention.self.query.bias", {c});
    if (!cfg.tie_qk) add(p + "attention.self.key.bias", {c});
    add(p + "attention.self.value.bias", {c});
    add(p + "attention.output.dense.weight", {c, c});
    add(p + "attention.output.dense.bias", {c});
    add(p + "attention.output.LayerNorm.weight", {c});
    add(p + "attention.output.LayerNorm.bias", {c});
    add(p + "intermediate.dense.weight", {f, c});
    add(p + "intermediate.dense.bias", {f});
    add(p + "output.dense.weight", {c, f});
    add(p + "output.dense.bias", {c});
    add(p + "output.LayerNorm.weight", {c});
    add(p + "output.LayerNorm.bias", {c});
  }
  if (cfg.task == Task::classify) {
    add("bert.pooler.dense.weight", {c, c});
    add("bert.pooler.dense.bias", {c});
    add("classifier.weight", {cfg.labels, c});
    add("classifier.bias", {cfg.labels});
  } else {  // BertForMaskedLM's head; the decoder's weight is the word embeddings unless untied
    if (cfg.pooler) {  // kept for fine-tuning, unused by the masked-LM pass: no weight decay
      add("bert.pooler.dense.weight", {c, c});
      out.back().decay = false;
      add("bert.pooler.dense.bias", {c});
    }
    add("cls.predictions.transform.dense.weight", {c, c});
    add("cls.predictions.transform.dense.bias", {c});
    add("cls.predictions.transform.LayerNorm.weight", {c});
    add("cls.predictions.transform.LayerNorm.bias", {c});
    add("cls.predictions.bias", {cfg.vocab_size});
    if (!cfg.tie_decoder) add("cls.predictions.decoder.weight", {cfg.vocab_size, c});
  }
  return out;
}

namespace {
constexpr const char* kMultiLabel = "multi_label_classification";
constexpr const char* kSingleLabel = "single_label_classification";
}  // namespace

nlohmann::json config_to_json(const ModelConfig& c) {
  nlohmann::json j = {{"vocab_size", c.vocab_size}, {"max_len", c.max_len}, {"dim", c.dim},
          {"heads", c.heads},           {"ffn", c.ffn},         {"layers", c.layers},
          {"labels", c.labels},         {"dropout", c.dropout}, {"layer_norm_eps", c.layer_norm_eps},
          {"tie_qk", c.tie_qk},         {"position_embeddings", c.position}, {"task", task_name(c.task)}};
  if (c.multi_label) j["problem_type"] = kMultiLabel;  // single-label files stay as they were
  if (c.type_vocab_size > 0) j["type_vocab_size"] = c.type_vocab_size;  // and so do files without these
  if (c.pooler) j["pooler"] = true;
  if (!c.tie_decoder) j["tie_decoder"] = false;
  if (c.readings) j["readings"] = {{"syllables", c.readings->syllables}, {"tokens", c.readings->of_token}};
  return j;
}

ModelConfig config_from_json(const nlohmann::json& j) {
  ModelConfig c;
  c.vocab_size = j.at("vocab_size").get<std::int64_t>();
  c.max_len = j.at("max_len").get<std::int64_t>();
  c.dim = j.at("dim").get<std::int64_t>();
  c.heads = j.at("heads").get<std::int64_t>();
  c.ffn = j.at("ffn").get<std::int64_t>();
  c.layers = j.at("layers").get<std::int64_t>();
  c.labels = j.at("labels").get<std::int64_t>();
  c.dropout = j.at("dropout").get<double>();
  c.layer_norm_eps = j.at("layer_norm_eps").get<double>();
  c.tie_qk = j.value("tie_qk", false);
  c.position = j.value("position_embeddings", true);
  c.task = task_from_name(j.value("task", "classify"));
  c.type_vocab_size = j.value("type_vocab_size", std::int64_t(0));
  c.pooler = j.value("pooler", false);
  c.tie_decoder = j.value("tie_decoder", true);
  if (j.contains("readings")) {
    const nlohmann::json& r = j.at("readings");
    c.readings = std::make_shared<const TokenReadings>(
        TokenReadings{r.at("syllables").get<std::vector<std::string>>(),
                      r.at("tokens").get<std::vector<std::vector<std::int32_t>>>()});
  }
  const std::string problem = j.value("problem_type", kSingleLabel);
  if (problem != kSingleLabel && problem != kMultiLabel)
    throw Error("unknown problem_type \"" + problem + "\" (zibert reads " + kSingleLabel + " and " + kMultiLabel + ")");
  c.multi_label = problem == kMultiLabel;
  return c;
}

}  // namespace zibert
