// zibert import of Hugging Face checkpoints (tests/data/hf, written by
// tests/reference/make_hf_checkpoints.py with the PyTorch reference): every
// form real files take, held to the reference's outputs and gradients.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "gradcheck.hpp"
#include "helpers.hpp"
#include "zibert/base/random.hpp"
#include "zibert/infer/predictor.hpp"
#include "zibert/model/hf_export.hpp"
#include "zibert/model/hf_import.hpp"
#include "zibert/model/model_file.hpp"

using namespace zibert;
using namespace zibert::test;

namespace {

const std::string kHf = std::string(ZIBERT_TEST_DATA) + "/hf";
// The parity test's directory: the committed fixtures, or (ZIBERT_HF_FIXTURES) the bert-base-like ones
// make_hf_checkpoints.py --shape base writes.
const std::string kParity = std::getenv("ZIBERT_HF_FIXTURES") ? std::getenv("ZIBERT_HF_FIXTURES") : kHf;

const nlohmann::json& expected() {
  static const nlohmann::json j = [] {
    std::ifstream in(kParity + "/expected.json");
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
  const Model m = import_hf_checkpoint(kParity + "/" + name);
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
  // Pretrained further, it is still the imported checkpoint's encoder.
  write_text(dir + "/corpus.txt", "佛跳墙是一道闽菜\n年夜饭的压轴菜\n我们点了一坛佛跳墙很香\n好吃\n");
  REQUIRE(run_zibert("pretrain -q --epochs 1 --init " + dir + "/enc.safetensors --text " + dir + "/corpus.txt --out " +
                     dir + "/enc2.safetensors").status == 0);
  const Model enc2 = load_model(dir + "/enc2.safetensors");
  CHECK(enc2.training["origin"]["checkpoint"] == "pretraining-bin");
  CHECK(enc2.training["imported_defaults"]["lr"] == 5e-5);  // not the 1e-3 of pretraining from scratch
  CHECK(enc2.training["lr"] == 5e-5);
  REQUIRE(run_zibert("pretrain -q --epochs 1 --lr 1e-4 --init " + dir + "/enc.safetensors --text " + dir +
                     "/corpus.txt --out " + dir + "/enc3.safetensors").status == 0);
  CHECK_FALSE(load_model(dir + "/enc3.safetensors").training.contains("imported_defaults"));
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

// ---- export: a Hugging Face checkpoint directory, and back

namespace {

// Every line "name shape" of BertForSequenceClassification's state dict for
// the fixtures' config (transformers ≥ 4.31, position_ids not persistent),
// written down from transformers' modules, not from zibert's layout.
std::vector<std::string> hf_state_dict_names() {
  std::vector<std::string> out;
  for (const std::string& line : lines_of(read_text(kHf + "/bert_for_sequence_classification.txt")))
    if (!line.empty() && line[0] != '#') out.push_back(line);
  return out;
}

std::vector<Prediction> predict(const Model& m, const std::vector<std::string>& texts) {
  std::vector<std::vector<char32_t>> prepared;
  for (const std::string& t : texts) prepared.push_back(m.tokenizer.prepare(t));
  Predictor p(m);
  return p.predict(prepared);
}

}  // namespace

TEST_CASE("export --hf writes what BertForSequenceClassification loads, and import gives the model back", "[hf][export]") {
  const std::string dir = temp_dir();
  REQUIRE(run_zibert("import " + kHf + "/cls-safetensors --out " + dir + "/cls.safetensors -q").status == 0);
  RunResult r = run_zibert("export --hf " + dir + "/hf -m " + dir + "/cls.safetensors");
  REQUIRE(r.status == 0);
  // The safetensors file: transformers' names, shapes and dtypes, and {"format": "pt"}.
  const std::string bytes = read_text(dir + "/hf/model.safetensors");
  const SafeTensors st = decode_safetensors(bytes, "model.safetensors");
  CHECK(st.metadata == std::map<std::string, std::string>{{"format", "pt"}});
  std::vector<std::string> got;
  for (const auto& [name, t] : st.tensors) {
    std::string shape;
    for (auto d : t.shape) shape += (shape.empty() ? "" : ",") + std::to_string(d);
    got.push_back(name + " [" + shape + "] " + dtype_name(t.dtype));
  }
  std::vector<std::string> want = hf_state_dict_names();
  std::sort(want.begin(), want.end());
  CHECK(got == want);
  std::ifstream in(dir + "/hf/config.json");
  const nlohmann::json config = nlohmann::json::parse(in);
  CHECK(config["architectures"] == nlohmann::json({"BertForSequenceClassification"}));
  CHECK(config["id2label"] == nlohmann::json({{"0", "负面"}, {"1", "中性"}, {"2", "正面"}}));
  CHECK(config["zibert"]["windows"] == "mean");
  // Round trip: the same weights, tokenizer and labels.
  const Model a = load_model(dir + "/cls.safetensors");
  const Model b = import_hf_checkpoint(dir + "/hf");
  CHECK(a.net.params() == b.net.params());
  CHECK(a.classifier.labels == b.classifier.labels);
  CHECK(a.tokenizer.wordpiece()->tokens() == b.tokenizer.wordpiece()->tokens());
  CHECK(wordpiece_to_json(a.tokenizer.wordpiece()->options()) == wordpiece_to_json(b.tokenizer.wordpiece()->options()));
}

TEST_CASE("an imported encoder exports as BertForMaskedLM and imports back the same", "[hf][export]") {
  const std::string dir = temp_dir();
  REQUIRE(run_zibert("import -q " + kHf + "/pretraining-bin --out " + dir + "/enc.safetensors").status == 0);
  REQUIRE(run_zibert("export -q --hf " + dir + "/hf -m " + dir + "/enc.safetensors").status == 0);
  std::ifstream in(dir + "/hf/config.json");
  const nlohmann::json config = nlohmann::json::parse(in);
  CHECK(config["architectures"] == nlohmann::json({"BertForMaskedLM"}));
  CHECK_FALSE(config.contains("id2label"));
  const SafeTensors st = decode_safetensors(read_text(dir + "/hf/model.safetensors"), "model.safetensors");
  for (const char* name : {"bert.embeddings.word_embeddings.weight", "bert.embeddings.token_type_embeddings.weight",
                           "cls.predictions.transform.dense.weight", "cls.predictions.bias"})
    CHECK(st.tensors.count(name) == 1);
  CHECK(st.tensors.count("classifier.weight") == 0);
  const Model a = load_model(dir + "/enc.safetensors");
  const Model b = import_hf_checkpoint(dir + "/hf");
  CHECK(b.config.task == Task::mlm);
  CHECK(a.net.params() == b.net.params());
  CHECK(a.tokenizer.wordpiece()->tokens() == b.tokenizer.wordpiece()->tokens());
  // fill-mask reads both the same.
  const std::string ask = "fill-mask -m ";
  const RunResult ra = run_zibert(ask + dir + "/enc.safetensors '年夜饭的压轴菜是佛跳[MASK]'");
  REQUIRE(run_zibert("import -q " + dir + "/hf --out " + dir + "/hf.safetensors").status == 0);
  const RunResult rc = run_zibert(ask + dir + "/hf.safetensors '年夜饭的压轴菜是佛跳[MASK]'");
  CHECK(ra.status == 0);
  CHECK(rc.status == 0);
  CHECK(!ra.out.empty());
  CHECK(ra.out == rc.out);
}

TEST_CASE("zibert's own calibrated model exported and imported predicts the same Chinese text", "[hf][export]") {
  Model m = tiny_classifier(4);
  m.classifier.calibration = Calibration{};
  m.classifier.calibration->temperature = 1.7;
  const std::string dir = temp_dir();
  save_model(dir + "/own.safetensors", m);
  REQUIRE(run_zibert("export -q --hf " + dir + "/hf -m " + dir + "/own.safetensors").status == 0);
  const Model back = import_hf_checkpoint(dir + "/hf");
  CHECK(std::filesystem::exists(dir + "/hf/tokenizer.json"));  // for PreTrainedTokenizerFast (bench-tokenizer-parity)
  CHECK(back.tokenizer.kind() == TokenizerKind::character);
  CHECK(back.tokenizer.vocab().tokens() == m.tokenizer.vocab().tokens());
  CHECK(back.classifier.positive == m.classifier.positive);
  std::vector<std::string> texts;
  for (const std::string& t : m.tokenizer.vocab().tokens())
    if (t.size() == 3) texts.push_back(texts.empty() ? t : texts.back() + t);  // growing runs of its CJK characters
  REQUIRE(texts.size() > 3);
  const auto p = predict(m, texts), q = predict(back, texts);
  for (std::size_t i = 0; i < texts.size(); ++i)
    for (std::size_t k = 0; k < p[i].probs.size(); ++k) CHECK(std::abs(p[i].probs[k] - q[i].probs[k]) < 1e-6);
  // What transformers cannot hold is refused.
  save_model(dir + "/q.safetensors", quantize_model(m));
  const RunResult r = run_zibert("export --hf " + dir + "/q -m " + dir + "/q.safetensors");
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::Contains("an int8 model cannot be a Hugging Face checkpoint"));
}

TEST_CASE("fine-tuning an imported encoder resumes byte-identically", "[hf][resume]") {
  const std::string dir = temp_dir();
  REQUIRE(run_zibert("import -q " + kHf + "/pretraining-bin --out " + dir + "/enc.safetensors").status == 0);
  std::string data;
  const char* texts[] = {"佛跳墙是一道闽菜", "好吃", "年夜饭的压轴菜", "我们点了一坛", "很香", "汤很鲜"};
  for (int i = 0; i < 12; ++i) data += std::string(i % 2 ? "正\t" : "负\t") + texts[i % 6] + (i > 5 ? "佛" : "") + "\n";
  write_text(dir + "/train.tsv", data);
  const std::string common = " --init " + dir + "/enc.safetensors --data " + dir + "/train.tsv --dev " + dir +
                             "/train.tsv --batch 2 --threads 1 -q --out " + dir;
  REQUIRE(run_zibert("train" + common + "/straight.safetensors").status == 0);
  interrupt_and_resume(common.substr(1) + "/resumed.safetensors", dir + "/ck", 7);
  CHECK(read_text(dir + "/resumed.safetensors") == read_text(dir + "/straight.safetensors"));
  CHECK(load_model(dir + "/resumed.safetensors").training["imported_defaults"] ==
        nlohmann::json({{"lr", 3e-5}, {"epochs", 3}, {"warmup", 0.1}}));
}
