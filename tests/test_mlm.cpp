// The masked-LM pass (BertForMaskedLM): gradients against finite
// differences, the tied decoder, data parallelism, and the encoder's file.
#include <catch2/catch.hpp>

#include "gradcheck.hpp"
#include "helpers.hpp"
#include "zibert/model/bert.hpp"
#include "zibert/model/model_file.hpp"
#include "zibert/train/data_parallel.hpp"
#include "zibert/train/masking.hpp"

using namespace zibert;
using namespace zibert::test;

namespace {

ModelConfig mlm_config(double dropout) {
  ModelConfig cfg = model_shape(12, 8, 8, 2, 16, 2, 0, dropout);
  cfg.task = Task::mlm;
  return cfg;
}

// Two sequences, the second padded; positions 1, 3 of the first and 2 of
// the second are chosen (one of them replaced by [MASK] = 4).
MaskedBatch tiny_masked() {
  MaskedBatch m;
  m.batch.size = 2;
  m.batch.seq = 6;
  m.batch.ids = {kCls, 5, 6, kMask, 8, kSep, kCls, 9, 10, kSep, kPadId, kPadId};
  m.positions = {1, 3, 8};
  m.targets = {5, 7, 10};
  return m;
}

}  // namespace

TEST_CASE("masked-LM gradients match finite differences: head, tied decoder, whole model", "[mlm][gradcheck]") {
  double dropout = GENERATE(0.0, 0.2);
  // zibert's encoder, or an imported checkpoint's: token types, a kept pooler (unused: zero gradient), its own decoder
  const bool imported = GENERATE(false, true);
  ModelConfig cfg = mlm_config(dropout);
  if (imported) {
    cfg.type_vocab_size = 2;
    cfg.pooler = true;
    cfg.tie_decoder = false;
  }
  Bert<double> net(cfg);
  fill_uniform(net.params().data(), net.params().size(), 31, -0.5, 0.5);
  const MaskedBatch batch = tiny_masked();
  ModelCache<double> cache;
  DropoutRng rng{5, 9, dropout};
  auto loss = [&] { return net.forward_mlm(batch, cache, &rng); };
  net.zero_grad();
  const double l0 = loss();
  CHECK(std::isfinite(l0));
  net.backward_mlm(batch, cache);
  const AlignedVector<double> analytic = net.grads();
  for (const TensorInfo& t : net.layout()) {
    INFO(t.name << " (dropout " << dropout << ", imported " << imported << ")");
    const std::vector<double> numeric = numeric_gradient(net.params().data() + t.offset, t.size, loss);
    if (t.name.starts_with("bert.pooler.")) {  // kept for fine-tuning; the masked-LM loss does not read it
      CHECK(norm(analytic.data() + t.offset, t.size) == 0.0);
      CHECK(norm(numeric.data(), numeric.size()) < 1e-8);
      continue;
    }
    check_tensor_gradient(t.name, analytic.data() + t.offset, numeric);
  }
}

TEST_CASE("the tied decoder's gradient adds into the word embeddings'", "[mlm][gradcheck]") {
  // The word embeddings' gradient is the decoder's (every row, also of
  // tokens absent from the batch) plus the input side's; without the
  // decoder's part rows of absent tokens would be zero.
  Bert<double> net(mlm_config(0.0));
  fill_uniform(net.params().data(), net.params().size(), 32, -0.5, 0.5);
  const MaskedBatch batch = tiny_masked();
  ModelCache<double> cache;
  net.zero_grad();
  net.forward_mlm(batch, cache, nullptr);
  net.backward_mlm(batch, cache);
  const TensorInfo& word = net.tensor("bert.embeddings.word_embeddings.weight");
  const Index c = 8;
  // Token 11 is in no sequence: its gradient is the decoder's alone, Σ_m (p_m,11 − [t_m = 11]) h_m / M.
  const MatMap<double> probs(cache.mlm.probs.data.data(), 3, 12), h(cache.mlm.h.data.data(), 3, c);
  for (Index j = 0; j < c; ++j) {
    double expect = 0;
    for (Index m = 0; m < 3; ++m) expect += probs(m, 11) * h(m, j) / 3.0;
    CHECK(net.grads()[word.offset + 11 * c + j] == Approx(expect).epsilon(1e-12));
  }
  // Token 9 is an input: its gradient is more than the decoder's part.
  double decoder_part = 0, total = 0;
  for (Index j = 0; j < c; ++j) {
    double d = 0;
    for (Index m = 0; m < 3; ++m) d += probs(m, 9) * h(m, j) / 3.0;
    decoder_part += std::abs(d);
    total += std::abs(net.grads()[word.offset + 9 * c + j] - d);
  }
  CHECK(total > 1e-6);
  CHECK(decoder_part > 1e-6);
}

TEST_CASE("the head runs on the chosen positions only", "[mlm]") {
  Bert<double> net(mlm_config(0.0));
  fill_uniform(net.params().data(), net.params().size(), 33, -0.5, 0.5);
  MaskedBatch batch = tiny_masked();
  ModelCache<double> cache;
  net.forward_mlm(batch, cache, nullptr);
  CHECK(cache.mlm.logits.data.size() >= 3 * 12);
  CHECK(cache.mlm.logits.data.size() < 12 * 12);  // never (N, V)
  // Without targets: probabilities, no loss; each row sums to 1.
  batch.targets.clear();
  CHECK(net.forward_mlm(batch, cache, nullptr) == 0.0);
  const MatMap<double> probs(cache.mlm.probs.data.data(), 3, 12);
  for (Index m = 0; m < 3; ++m) CHECK(probs.row(m).sum() == Approx(1.0).epsilon(1e-12));
}

TEST_CASE("the masked-LM last layer on the chosen rows gives the loss and gradients of the full one", "[mlm]") {
  Bert<double> net(mlm_config(0.2));
  fill_uniform(net.params().data(), net.params().size(), 35, -0.5, 0.5);
  // A third sequence without a chosen position: its keys and values get no gradient from the last layer.
  MaskedBatch batch = tiny_masked();
  batch.batch.size = 3;
  for (std::int32_t id : std::vector<std::int32_t>{kCls, 11, 5, kSep, kPadId, kPadId}) batch.batch.ids.push_back(id);
  DropoutRng rng{7, 3, 0.2};
  auto run = [&](LastRows last, AlignedVector<double>& grads) {
    ModelCache<double> cache;
    net.zero_grad();
    const double loss = net.forward_mlm(batch, cache, &rng, last);
    CHECK(cache.rows_only == (last == LastRows::needed));
    net.backward_mlm(batch, cache);
    grads = net.grads();
    return loss;
  };
  AlignedVector<double> g_rows, g_all;
  const double l_rows = run(LastRows::needed, g_rows), l_all = run(LastRows::all, g_all);
  CHECK(l_rows == Approx(l_all).epsilon(1e-13));
  CHECK(relative_error(g_rows.data(), g_all.data(), g_rows.size()) < 1e-12);
}

TEST_CASE("a masked batch split over threads gives the loss and gradients of the whole batch", "[mlm][parallel]") {
  int parts = GENERATE(2, 3);
  ModelConfig cfg = mlm_config(0.2);
  cfg.vocab_size = 30;
  Bert<double> net(cfg);
  fill_uniform(net.params().data(), net.params().size(), 34, -0.5, 0.5);
  Rng r(4);
  std::vector<std::vector<std::int32_t>> seqs;
  for (int i = 0; i < 7; ++i) {
    std::vector<std::int32_t> ids;
    for (std::uint64_t j = 0, len = 2 + r.below(5); j < len; ++j)
      ids.push_back(static_cast<std::int32_t>(kNumSpecial + r.below(25)));
    seqs.push_back(with_specials(ids, cfg.max_len, SpecialIds{}));
  }
  std::vector<const std::vector<std::int32_t>*> ptrs;
  for (const auto& s : seqs) ptrs.push_back(&s);
  const MaskedBatch batch = mask_tokens(pack_batch(ptrs, {}), cfg.vocab_size, SpecialIds{}, 3, 1, 0.4);
  REQUIRE(batch.positions.size() >= 4);
  DropoutRng rng{7, 3, 0.2};
  const int rounds = GENERATE(1, 2);  // --accumulate: the parts in rounds
  DataParallel<double> one(1), split(parts, rounds);
  const double l1 = one.train_mlm(net, batch, &rng);
  const AlignedVector<double> g1 = net.grads();
  const double l2 = split.train_mlm(net, batch, &rng);
  INFO(parts << " parts, " << rounds << " rounds");
  CHECK(l2 == Approx(l1).epsilon(1e-13));
  CHECK(relative_error(net.grads().data(), g1.data(), g1.size()) < 1e-12);
}

TEST_CASE("an encoder has cls.predictions tensors and no classifier, and the passes check the task", "[mlm]") {
  Bert<double> enc(mlm_config(0.0));
  std::vector<std::string> names;
  for (const TensorInfo& t : enc.layout()) names.push_back(t.name);
  CHECK(std::find(names.begin(), names.end(), "cls.predictions.bias") != names.end());
  CHECK(std::find(names.begin(), names.end(), "cls.predictions.transform.dense.weight") != names.end());
  CHECK(std::find(names.begin(), names.end(), "cls.predictions.transform.LayerNorm.weight") != names.end());
  CHECK(std::find(names.begin(), names.end(), "classifier.weight") == names.end());
  CHECK(std::find(names.begin(), names.end(), "bert.pooler.dense.weight") == names.end());
  Batch plain = tiny_masked().batch;
  ModelCache<double> cache;
  CHECK_THROWS_WITH(enc.forward(plain, cache, nullptr), Catch::Contains("this model is an encoder"));
  Bert<double> clf(model_shape(12, 8, 8, 2, 16, 2, 3, 0.0));
  CHECK_THROWS_WITH(clf.forward_mlm(tiny_masked(), cache, nullptr), Catch::Contains("needs an encoder"));
  ModelConfig bad = mlm_config(0.0);
  bad.labels = 2;
  CHECK_THROWS_WITH(bad.validate(), Catch::Contains("no labels"));
}
