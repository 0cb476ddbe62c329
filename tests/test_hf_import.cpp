// zibert import of Hugging Face checkpoints (tests/data/hf, written by
// tests/reference/make_hf_checkpoints.py with the PyTorch reference): every
// form real files take, held to the reference's outputs and gradients.
#include <catch2/catch.hpp>

#include <fstream>

#include "gradcheck.hpp"
#include "helpers.hpp"
#include "zibert/model/hf_import.hpp"
#include "zibert/model/model_file.hpp"

using namespace zibert;
using namespace zibert::test;

namespace {

const std::string kHf = std::string(ZIBERT_TEST_DATA) + "/hf";

const nlohmann::json& expected() {
  static const nlohmann::json j = [] {
    std::ifstream in(kHf + "/expected.json");
    return nlohmann::json::parse(in);
  }();
  return j;
}

// The fixture's sequences, padded with [PAD] to one length.
Batch padded(const nlohmann::json& ids) {
  Batch b;
  b.size = static_cast<Index>(ids.size());
  for (const auto& s : ids) b.seq = std::max<Index>(b.seq, static_cast<Index>(s.size()));
  for (const auto& s : ids) {
    for (const auto& id : s) b.ids.push_back(id.get<std::int32_t>());
    for (auto i = static_cast<Index>(s.size()); i < b.seq; ++i) b.ids.push_back(kPadId);
  }
  return b;
}

template <class T>
Bert<T> net_of(const Model& m) {
  Bert<T> net(m.config);
  for (std::size_t i = 0; i < net.params().size(); ++i) net.params()[i] = T(m.net.params()[i]);
  return net;
}

double max_diff(const double* got, const nlohmann::json& want) {
  double d = 0;
  for (std::size_t i = 0; i < want.size(); ++i) d = std::max(d, std::abs(got[i] - want[i].get<double>()));
  return d;
}

// [CLS] states of the last layer (every row computed), in T.
template <class T>
void check_cls_states(const Model& m, const nlohmann::json& e, double tol) {
  Bert<T> net = net_of<T>(m);
  Batch batch = padded(e["ids"]);
  ModelCache<T> cache;
  if (m.config.task == Task::classify)
    net.forward(batch, cache, nullptr, LastRows::all);
  else
    net.forward_mlm({batch, {}, {}}, cache, nullptr, LastRows::all);
  const Index n = batch.size * batch.seq, c = m.config.dim;
  for (Index b = 0; b < batch.size; ++b) {
    std::vector<double> row(c);
    for (Index j = 0; j < c; ++j) row[j] = double(cache.hidden.data[(m.config.layers * n + b * batch.seq) * c + j]);
    CHECK(max_diff(row.data(), e["cls_states"][b]) < tol);
  }
}

}  // namespace

TEST_CASE("imported checkpoints tokenize as BertTokenizer and compute as the PyTorch reference", "[hf]") {
  const std::string name = GENERATE("cls-safetensors", "pretraining-bin", "mlm-untied-bf16", "bertmodel-f16");
  INFO(name);
  const Model m = import_hf_checkpoint(kHf + "/" + name);
  const nlohmann::json& e = expected().at(name);
  // The tokenizer gives the reference's ids.
  const char* texts[] = {"佛跳墙是一道闽菜", "年夜饭的压轴菜", "我们点了一坛佛跳墙很香", "好吃"};
  for (std::size_t i = 0; i < 4; ++i) {
    std::vector<std::int32_t> ids = e["ids"][i].get<std::vector<std::int32_t>>();
    ids = std::vector<std::int32_t>(ids.begin() + 1, ids.end() - 1);  // without [CLS] and [SEP]
    CHECK(m.tokenizer.ids(m.tokenizer.prepare(texts[i])) == ids);
  }
  CHECK(m.config.type_vocab_size == 2);
  check_cls_states<double>(m, e, 1e-9);
  check_cls_states<float>(m, e, 1e-4);
  if (e.contains("probs")) {  // a classifier: probabilities, pooled outputs and the loss's gradients
    REQUIRE(m.config.task == Task::classify);
    CHECK(m.classifier.labels == std::vector<std::string>{"负面", "中性", "正面"});
    Batch batch = padded(e["ids"]);
    batch.labels = e["labels"].get<std::vector<std::int32_t>>();
    Bert<double> net = net_of<double>(m);
    ModelCache<double> cache;
    net.zero_grad();
    net.forward(batch, cache, nullptr);
    net.backward(batch, cache);
    for (Index b = 0; b < batch.size; ++b) {
      CHECK(max_diff(cache.probs.data.data() + b * 3, e["probs"][b]) < 1e-9);
      CHECK(max_diff(cache.pooled.data.data() + b * m.config.dim, e["pooled"][b]) < 1e-9);
    }
    for (const auto& [tensor, grad] : e["grads"].items()) {
      INFO(tensor);
      const TensorInfo& t = net.tensor(tensor);
      REQUIRE(grad.size() == t.size);
      std::vector<double> want = grad.get<std::vector<double>>();
      if (tensor.ends_with("attention.self.key.bias"))  // zero in exact arithmetic: both are rounding noise
        CHECK(max_diff(net.grads().data() + t.offset, grad) < 1e-12);
      else
        CHECK(test::relative_error(net.grads().data() + t.offset, want.data(), t.size) < 1e-9);
    }
    Bert<float> f = net_of<float>(m);
    ModelCache<float> fc;
    f.forward(batch, fc, nullptr);
    for (Index b = 0; b < batch.size; ++b)
      for (Index k = 0; k < 3; ++k) CHECK(std::abs(fc.probs.data[b * 3 + k] - e["probs"][b][k].get<double>()) < 1e-4);
  }
  if (e.contains("mlm_probs")) {  // the masked-LM head, tied or untied
    REQUIRE(m.config.task == Task::mlm);
    CHECK(m.config.tie_decoder == (name != "mlm-untied-bf16"));
    CHECK(m.config.pooler == (name == "pretraining-bin"));
    MaskedBatch mb{padded(nlohmann::json::array({e["mlm_ids"]})), {e["mlm_position"].get<std::int32_t>()}, {}};
    Bert<double> net = net_of<double>(m);
    ModelCache<double> cache;
    net.forward_mlm(mb, cache, nullptr);
    CHECK(max_diff(cache.mlm.probs.data.data(), e["mlm_probs"]) < 1e-9);
    Bert<float> f = net_of<float>(m);
    ModelCache<float> fc;
    f.forward_mlm(mb, fc, nullptr);
    for (std::size_t v = 0; v < e["mlm_probs"].size(); ++v)
      CHECK(std::abs(fc.mlm.probs.data[v] - e["mlm_probs"][v].get<double>()) < 1e-4);
  }
  // What real files carry and zibert does not use is listed.
  if (name == std::string("pretraining-bin"))
    CHECK(m.training["origin"]["ignored"] ==
          nlohmann::json({"bert.embeddings.position_ids", "cls.seq_relationship.bias", "cls.seq_relationship.weight"}));
  if (name == std::string("bertmodel-f16"))
    CHECK(m.training["origin"]["mlm_head"] == "initialised (not in the checkpoint)");
}

TEST_CASE("an imported model saves, loads and runs every command as zibert's own", "[hf][cli]") {
  const std::string dir = temp_dir();
  RunResult r = run_zibert("import " + kHf + "/cls-safetensors --out " + dir + "/cls.safetensors");
  REQUIRE(r.status == 0);
  const Model saved = load_model(dir + "/cls.safetensors");
  const Model direct = import_hf_checkpoint(kHf + "/cls-safetensors");
  CHECK(saved.net.params() == direct.net.params());
  CHECK(saved.tokenizer.kind() == TokenizerKind::wordpiece);
  r = run_zibert("info -m " + dir + "/cls.safetensors");
  CHECK(r.out.find("imported    Hugging Face checkpoint cls-safetensors (BertForSequenceClassification; model.safetensors)") !=
        std::string::npos);
  write_text(dir + "/t.txt", "佛跳墙是一道闽菜\n好吃\n");
  r = run_zibert("classify -m " + dir + "/cls.safetensors " + dir + "/t.txt");
  CHECK(r.status <= 1);
  CHECK(lines_of(r.out).size() == 2);
  REQUIRE(run_zibert("import " + kHf + "/pretraining-bin --out " + dir + "/enc.safetensors").status == 0);
  r = run_zibert("fill-mask -m " + dir + "/enc.safetensors '年夜饭的压轴菜是佛跳[MASK]'");
  CHECK(r.status == 0);
  // Fine-tuning an imported encoder: BERT's defaults, recorded; the pretrained pooler kept.
  write_text(dir + "/train.tsv", "正\t佛跳墙是一道闽菜\n负\t好吃\n正\t年夜饭的压轴菜\n负\t我们点了一坛\n");
  r = run_zibert("train --init " + dir + "/enc.safetensors --data " + dir + "/train.tsv --dev " + dir +
                 "/train.tsv --out " + dir + "/ft.safetensors --quiet --no-calibration");
  REQUIRE(r.status == 0);
  const Model ft = load_model(dir + "/ft.safetensors");
  CHECK(ft.training["imported_defaults"] == nlohmann::json({{"lr", 3e-5}, {"epochs", 3}, {"batch", 32}, {"warmup", 0.1}}));
  CHECK(ft.training["pretraining"]["origin"]["checkpoint"] == "pretraining-bin");
  r = run_zibert("info -m " + dir + "/ft.safetensors");
  CHECK(r.out.find("imported    Hugging Face checkpoint pretraining-bin") != std::string::npos);
  r = run_zibert("train --init " + dir + "/enc.safetensors --data " + dir + "/train.tsv --dev " + dir +
                 "/train.tsv --out " + dir + "/ft2.safetensors --quiet --no-calibration --lr 1e-4 --epochs 1");
  REQUIRE(r.status == 0);
  CHECK(load_model(dir + "/ft2.safetensors").training["imported_defaults"] ==
        nlohmann::json({{"batch", 32}, {"warmup", 0.1}}));
}

TEST_CASE("fine-tuning from an imported encoder keeps its pretrained pooler", "[hf]") {
  const Model enc = import_hf_checkpoint(kHf + "/pretraining-bin");
  REQUIRE(enc.config.pooler);
  ModelConfig c = enc.config;
  c.task = Task::classify;
  c.labels = 2;
  c.pooler = false;
  Bert<float> cls(c);
  cls.init_weights(3);
  copy_encoder_weights(enc.net, cls);
  for (const char* name : {"bert.pooler.dense.weight", "bert.pooler.dense.bias",
                           "bert.embeddings.token_type_embeddings.weight"}) {
    const TensorInfo& from = enc.net.tensor(name);
    const TensorInfo& to = cls.tensor(name);
    CHECK(std::equal(enc.net.params().begin() + from.offset, enc.net.params().begin() + from.offset + from.size,
                     cls.params().begin() + to.offset));
  }
}
