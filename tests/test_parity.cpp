// Parity with PyTorch: the fixture written by tests/reference/torch_reference.py
// (float64 PyTorch) against zibert's float and double models.
#include <catch2/catch.hpp>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "zibert/model/bert.hpp"
#include "zibert/train/optimizer.hpp"

using namespace zibert;

namespace {

nlohmann::json load_fixture(const std::string& name) {
  std::ifstream in(std::string(ZIBERT_TEST_DATA "/") + name);
  REQUIRE(in.good());
  return nlohmann::json::parse(in);
}

template <class T>
double rel_error(const T* got, const std::vector<double>& want) {
  double diff = 0, norm = 0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    diff += (double(got[i]) - want[i]) * (double(got[i]) - want[i]);
    norm += want[i] * want[i];
  }
  return std::sqrt(diff) / std::max(std::sqrt(norm), 1e-30);
}

ModelConfig config_of(const nlohmann::json& c) {
  ModelConfig cfg;
  cfg.vocab_size = c["vocab_size"];
  cfg.max_len = c["max_len"];
  cfg.dim = c["dim"];
  cfg.heads = c["heads"];
  cfg.ffn = c["ffn"];
  cfg.layers = c["layers"];
  cfg.labels = c["labels"];
  cfg.task = task_from_name(c.value("task", "classify"));
  cfg.dropout = 0.0;
  cfg.layer_norm_eps = c["layer_norm_eps"];
  return cfg;
}

template <class T>
void load_params(Bert<T>& net, const nlohmann::json& fx) {
  for (const TensorInfo& t : net.layout()) {
    auto values = fx["params"].at(t.name).get<std::vector<double>>();
    REQUIRE(values.size() == t.size);
    for (std::size_t i = 0; i < t.size; ++i) net.params()[t.offset + i] = T(values[i]);
  }
}

Batch batch_of_fixture(const nlohmann::json& fx) {
  Batch batch;
  auto ids = fx["ids"].get<std::vector<std::vector<std::int32_t>>>();
  batch.size = static_cast<Index>(ids.size());
  batch.seq = static_cast<Index>(ids[0].size());
  for (const auto& row : ids) batch.ids.insert(batch.ids.end(), row.begin(), row.end());
  return batch;
}

// The loss, the logits and every gradient of one pass (pass() runs forward
// and backward and returns {loss, logits}), then 3 AdamW steps with clipping.
template <class T, class Pass>
void check_against(Bert<T>& net, const nlohmann::json& fx, double tol, const Pass& pass) {
  net.zero_grad();
  const auto [loss, logits] = pass();
  CHECK(std::abs(double(loss) - fx["loss"].get<double>()) <= tol * std::abs(fx["loss"].get<double>()));
  std::vector<double> want_logits;
  for (const auto& row : fx["logits"])
    for (double v : row) want_logits.push_back(v);
  CHECK(rel_error(logits, want_logits) <= tol);
  for (const TensorInfo& t : net.layout()) {
    INFO("gradient of " << t.name);
    auto want = fx["grads"].at(t.name).get<std::vector<double>>();
    if (t.name.ends_with("attention.self.key.bias")) {  // zero in exact arithmetic
      for (std::size_t i = 0; i < t.size; ++i) CHECK(std::abs(double(net.grads()[t.offset + i])) < 1e-5);
      continue;
    }
    CHECK(rel_error(net.grads().data() + t.offset, want) <= tol);
  }

  const auto& a = fx["adam"];
  AdamWConfig ac;
  ac.lr = a["lr"];
  ac.beta1 = a["beta1"];
  ac.beta2 = a["beta2"];
  ac.eps = a["eps"];
  ac.weight_decay = a["weight_decay"];
  ac.clip_norm = a["clip_norm"];
  AdamW<T> adam(ac, net.layout());
  const std::int64_t steps = a["steps"], warmup = a["warmup"], total = a["total"];
  auto norms = fx["grad_norms"].get<std::vector<double>>();
  for (std::int64_t s = 0; s < steps; ++s) {
    net.zero_grad();
    pass();
    double norm = clip_grad_norm(net.grads(), ac.clip_norm);
    CHECK(norm == Approx(norms[s]).epsilon(tol));
    adam.step(net.params(), net.grads(), ac.lr * lr_multiplier(s, warmup, total));
  }
  for (const TensorInfo& t : net.layout()) {
    INFO("after " << steps << " AdamW steps: " << t.name);
    CHECK(rel_error(net.params().data() + t.offset, fx["params_after"].at(t.name).get<std::vector<double>>()) <=
          tol);
  }
}

template <class T>
void check_parity(double tol) {
  nlohmann::json fx = load_fixture("torch_parity.json");
  Bert<T> net(config_of(fx["config"]));
  load_params(net, fx);
  Batch batch = batch_of_fixture(fx);
  auto mask = fx["mask"].get<std::vector<std::vector<int>>>();
  for (Index i = 0; i < batch.size * batch.seq; ++i)
    CHECK(mask[i / batch.seq][i % batch.seq] == (batch.ids[i] != kPadId ? 1 : 0));  // zibert's mask is ids != [PAD]
  batch.labels = fx["labels"].get<std::vector<std::int32_t>>();
  ModelCache<T> cache;
  check_against(net, fx, tol, [&] {
    T loss = net.forward(batch, cache, nullptr);
    net.backward(batch, cache);
    return std::pair<T, const T*>(loss, cache.logits.data.data());
  });
}

// BertForMaskedLM: logits on the masked positions only, the loss over them,
// every gradient (the tied decoder's in the word embeddings'), 3 AdamW steps.
template <class T>
void check_mlm_parity(double tol) {
  nlohmann::json fx = load_fixture("torch_parity_mlm.json");
  Bert<T> net(config_of(fx["config"]));
  REQUIRE(net.config().task == Task::mlm);
  load_params(net, fx);
  MaskedBatch masked;
  masked.batch = batch_of_fixture(fx);
  masked.positions = fx["positions"].get<std::vector<std::int32_t>>();
  masked.targets = fx["targets"].get<std::vector<std::int32_t>>();
  ModelCache<T> cache;
  check_against(net, fx, tol, [&] {
    T loss = net.forward_mlm(masked, cache, nullptr);
    net.backward_mlm(masked, cache);
    return std::pair<T, const T*>(loss, cache.mlm.logits.data.data());
  });
}

}  // namespace

TEST_CASE("float model matches PyTorch within 1e-4", "[parity]") { check_parity<float>(1e-4); }
TEST_CASE("double model matches PyTorch within 1e-9", "[parity]") { check_parity<double>(1e-9); }
TEST_CASE("float masked-LM model matches PyTorch's BertForMaskedLM within 1e-4", "[parity][mlm]") {
  check_mlm_parity<float>(1e-4);
}
TEST_CASE("double masked-LM model matches PyTorch's BertForMaskedLM within 1e-9", "[parity][mlm]") {
  check_mlm_parity<double>(1e-9);
}
