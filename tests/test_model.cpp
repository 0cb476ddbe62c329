// The whole model's backward against finite differences, and training sanity.
#include <catch2/catch.hpp>

#include <tuple>
#include <type_traits>

#include "gradcheck.hpp"
#include "helpers.hpp"
#include "zibert/infer/fast_forward.hpp"
#include "zibert/infer/packed_net.hpp"
#include "zibert/model/batch.hpp"
#include "zibert/nn/gemm.hpp"
#include "zibert/model/bert.hpp"
#include "zibert/train/optimizer.hpp"
#include "zibert/train/data_parallel.hpp"

using namespace zibert;
using namespace zibert::test;

namespace {

ModelConfig tiny_config(double dropout) { return model_shape(12, 8, 8, 2, 16, 2, 3, dropout); }

// A reading channel for tiny_config's 12 tokens: 5 and 9 read alike, 7 has
// two readings (one of them 5's), the specials and 10 none.
std::shared_ptr<const TokenReadings> tiny_readings() {
  return std::make_shared<const TokenReadings>(TokenReadings{
      {"fo", "tiao", "qiang", "men"}, {{}, {}, {}, {}, {}, {2}, {1}, {2, 3}, {0}, {2}, {}, {3}}});
}

// Two sequences; the second is padded with two [PAD] tokens.
Batch tiny_batch() {
  Batch b;
  b.size = 2;
  b.seq = 6;
  b.ids = {kCls, 5, 6, 7, 8, kSep, kCls, 9, 10, kSep, kPadId, kPadId};
  b.labels = {2, 0};
  return b;
}

}  // namespace

TEST_CASE("whole-model gradients match finite differences (L=2 H=2 C=8 F=16)", "[model][gradcheck]") {
  // dropout; BERT, shared Q = K, no position embeddings or token type embeddings (an imported
  // checkpoint's); the last layer on [CLS] rows only or on every row.
#ifdef ZIBERT_SANITIZED
  // Some thirty times slower here: each choice at least once (the Release build checks all twelve combinations).
  const std::tuple<double, int, bool> choice = GENERATE(
      table<double, int, bool>({{0.0, 0, false}, {0.2, 1, true}, {0.2, 2, false}, {0.2, 3, false}, {0.2, 4, true}}));
#else
  const std::tuple<double, int, bool> choice{GENERATE(0.0, 0.2), GENERATE(0, 1, 2, 3, 4), GENERATE(false, true)};
#endif
  const auto [dropout, variant, all_rows] = choice;
  ModelConfig cfg = tiny_config(dropout);
  cfg.tie_qk = variant == 1;
  cfg.position = variant != 2;
  cfg.type_vocab_size = variant == 3 ? 2 : 0;
  if (variant == 4) cfg.readings = tiny_readings();  // the reading channel
  Bert<double> net(cfg);
  // Large weights so that every gradient is well above rounding noise.
  fill_uniform(net.params().data(), net.params().size(), 21, -0.5, 0.5);
  Batch batch = tiny_batch();
  ModelCache<double> cache;
  const LastRows last = all_rows ? LastRows::all : LastRows::needed;
  DropoutRng rng{5, 9, dropout};
  auto loss = [&] { return net.forward(batch, cache, &rng, last); };
  net.zero_grad();
  loss();
  net.backward(batch, cache);
  AlignedVector<double> analytic = net.grads();
  for (const TensorInfo& t : net.layout()) {
    INFO(t.name << " (dropout " << dropout << ", variant " << variant << ", all rows " << all_rows << ")");
    auto num = numeric_gradient(net.params().data() + t.offset, t.size, loss);
    if (t.name == "bert.embeddings.word_embeddings.weight") {
      // Rows of tokens absent from the batch, and [PAD], have zero gradient.
      for (std::size_t i = 0; i < t.size; ++i) {
        std::size_t row = i / 8;
        if (row == 0 || row == 1 || row == 4 || row == 11) CHECK(analytic[t.offset + i] == 0.0);
      }
    }
    if (t.name == "bert.embeddings.token_type_embeddings.weight")  // every token is of type 0
      for (std::size_t i = 8; i < t.size; ++i) CHECK(analytic[t.offset + i] == 0.0);
    if (t.name == "bert.embeddings.reading_embeddings.weight")  // every syllable is read by a token of the batch
      for (std::size_t r = 0; r < 4; ++r) CHECK(Eigen::Map<const Eigen::VectorXd>(analytic.data() + t.offset + r * 8, 8).norm() > 0);
    check_tensor_gradient(t.name, analytic.data() + t.offset, num);
  }
}

TEST_CASE("sound-only tokens: a drawn share of characters read by their readings alone, gradients exact",
          "[model][gradcheck][reading]") {
  ModelConfig cfg = tiny_config(0.2);
  cfg.readings = tiny_readings();
  Bert<double> net(cfg);
  fill_uniform(net.params().data(), net.params().size(), 23, -0.5, 0.5);
  const Batch batch = tiny_batch();
  ModelCache<double> cache;
  const DropoutRng plain{5, 9, 0.2}, sounds{5, 9, 0.2, 0.5};
  const double without = net.forward(batch, cache, &plain);
  CHECK(cache.sound_only.rows == 0);
  auto loss = [&] { return net.forward(batch, cache, &sounds); };
  CHECK(loss() != without);
  // Drawn per token: only characters with readings (5 6 7 8 9), never the
  // specials, 10 (no reading) or [PAD]; with P 0.5 some are, some are not.
  REQUIRE(cache.sound_only.rows == 12);
  const std::vector<std::uint8_t> keep = cache.sound_only.keep;
  int left_out = 0;
  for (std::size_t i = 0; i < 12; ++i) {
    const bool read = !cfg.readings->of_token[std::size_t(batch.ids[i])].empty();
    if (!read) CHECK(keep[i] == 1);
    left_out += keep[i] == 0;
  }
  CHECK(left_out > 0);
  CHECK(left_out < 5);
  net.zero_grad();
  loss();
  net.backward(batch, cache);
  const AlignedVector<double> analytic = net.grads();
  for (const TensorInfo& t : net.layout()) {
    INFO(t.name);
    auto num = numeric_gradient(net.params().data() + t.offset, t.size, loss);
    if (t.name == "bert.embeddings.word_embeddings.weight")  // a token left out at its every place has none
      for (std::size_t i = 0; i < 12; ++i)
        if (keep[i] == 0 && std::count(batch.ids.begin(), batch.ids.end(), batch.ids[i]) == 1)
          CHECK(Eigen::Map<const Eigen::VectorXd>(analytic.data() + t.offset + std::size_t(batch.ids[i]) * 8, 8).norm() == 0.0);
    check_tensor_gradient(t.name, analytic.data() + t.offset, num);
  }
  // Split over threads, each part draws the whole batch's tokens.
  DataParallel<double> one(1), split(2);
  const double l1 = one.train(net, batch, &sounds);
  const AlignedVector<double> g1 = net.grads();
  const double l2 = split.train(net, batch, &sounds);
  CHECK(l2 == Approx(l1).epsilon(1e-13));
  CHECK(relative_error(net.grads().data(), g1.data(), g1.size()) < 1e-12);
}

TEST_CASE("multi-label (one sigmoid per label, BCE) gradients match finite differences", "[model][gradcheck][multi-label]") {
  double dropout = GENERATE(0.0, 0.2);
  ModelConfig cfg = tiny_config(dropout);
  cfg.multi_label = true;
  Bert<double> net(cfg);
  fill_uniform(net.params().data(), net.params().size(), 24, -0.5, 0.5);
  Batch batch = tiny_batch();
  batch.labels.clear();
  batch.targets = {1, 0, 1, 0, 0, 0};  // the first text has labels 0 and 2, the second none
  ModelCache<double> cache;
  DropoutRng rng{5, 9, dropout};
  auto loss = [&] { return net.forward(batch, cache, &rng); };
  net.zero_grad();
  const double l = loss();
  net.backward(batch, cache);
  AlignedVector<double> analytic = net.grads();
  // The loss is Σ_labels BCE of σ(logits), averaged over the two texts.
  const MatMap<double> logits(cache.logits.data.data(), 2, 3);
  double expect = 0;
  for (Index b = 0; b < 2; ++b)
    for (Index k = 0; k < 3; ++k) {
      const double s = 1 / (1 + std::exp(-logits(b, k)));
      expect -= batch.targets[b * 3 + k] ? std::log(s) : std::log(1 - s);
    }
  CHECK(l == Approx(expect / 2).epsilon(1e-13));
  for (const TensorInfo& t : net.layout()) {
    INFO(t.name << " (dropout " << dropout << ")");
    check_tensor_gradient(t.name, analytic.data() + t.offset, numeric_gradient(net.params().data() + t.offset, t.size, loss));
  }
  SECTION("split over threads: the same loss and gradients") {
    DataParallel<double> one(1), split(2);
    const double l1 = one.train(net, batch, &rng);
    AlignedVector<double> g1 = net.grads();
    const double l2 = split.train(net, batch, &rng);
    CHECK(l2 == Approx(l1).epsilon(1e-13));
    CHECK(relative_error(net.grads().data(), g1.data(), g1.size()) < 1e-12);
  }
  SECTION("the inference fast path gives the training pass's sigmoids") {
    Batch unlabelled = batch;
    unlabelled.targets.clear();
    net.forward(unlabelled, cache, nullptr);
    const MatR<double> expect_probs = MatMap<double>(cache.probs.data.data(), 2, 3);
    CHECK(expect_probs.row(0).sum() != Approx(1.0));  // not a softmax
    InferenceCache<double> ic;
    const CMatMap<double> fast = infer_forward(net, unlabelled, ic);
    CHECK((fast - expect_probs).cwiseAbs().maxCoeff() < 1e-12);
  }
}

TEST_CASE("the [CLS]-only last layer gives the loss and gradients of the full one", "[model]") {
  Bert<double> net(tiny_config(0.2));
  fill_uniform(net.params().data(), net.params().size(), 22, -0.5, 0.5);
  Batch batch = tiny_batch();
  DropoutRng rng{7, 3, 0.2};
  auto run = [&](bool all_rows, AlignedVector<double>& grads) {
    ModelCache<double> cache;
    net.zero_grad();
    double loss = net.forward(batch, cache, &rng, all_rows ? LastRows::all : LastRows::needed);
    net.backward(batch, cache);
    grads = net.grads();
    return loss;
  };
  AlignedVector<double> g_cls, g_all;
  double l_cls = run(false, g_cls), l_all = run(true, g_all);
  CHECK(l_cls == Approx(l_all).epsilon(1e-13));
  CHECK(relative_error(g_cls.data(), g_all.data(), g_cls.size()) < 1e-12);
}

TEST_CASE("a batch split over threads gives the loss and gradients of the whole batch", "[model][parallel]") {
  // rounds > 1: the parts run in rounds whose gradients accumulate (--accumulate).
  int parts = GENERATE(2, 3), rounds = GENERATE(1, 2, 3);
  ModelConfig cfg = tiny_config(0.2);
  cfg.vocab_size = 20;
  Bert<double> net(cfg);
  fill_uniform(net.params().data(), net.params().size(), 23, -0.5, 0.5);
  Rng r(4);
  std::vector<std::vector<std::int32_t>> seqs;
  std::vector<std::int32_t> labels;
  for (int i = 0; i < 7; ++i) {
    std::vector<std::int32_t> ids;
    for (std::uint64_t j = 0, len = 1 + r.below(5); j < len; ++j) ids.push_back(static_cast<std::int32_t>(5 + r.below(15)));
    seqs.push_back(with_specials(ids, cfg.max_len, SpecialIds{}));
    labels.push_back(static_cast<std::int32_t>(r.below(3)));
  }
  std::vector<const std::vector<std::int32_t>*> ptrs;
  for (const auto& s : seqs) ptrs.push_back(&s);
  Batch batch = pack_batch(ptrs, labels);
  DropoutRng rng{7, 3, 0.2};
  DataParallel<double> one(1), split(parts, rounds);
  double l1 = one.train(net, batch, &rng);
  AlignedVector<double> g1 = net.grads();
  double l2 = split.train(net, batch, &rng);
  INFO(parts << " parts, " << rounds << " rounds");
  CHECK(l2 == Approx(l1).epsilon(1e-13));
  CHECK(relative_error(net.grads().data(), g1.data(), g1.size()) < 1e-12);
}

TEST_CASE("padding does not change a sequence's prediction", "[model]") {
  Bert<float> net(tiny_config(0.0));
  net.init_weights(3);
  InferenceCache<float> cache;
  Batch alone;
  alone.size = 1;
  alone.seq = 4;
  alone.ids = {kCls, 9, 10, kSep};
  MatR<float> p1 = infer_forward(net, alone, cache);
  Batch padded = tiny_batch();
  padded.labels.clear();
  MatR<float> p2 = infer_forward(net, padded, cache);
  for (Index c = 0; c < 3; ++c) CHECK(p2(1, c) == Approx(p1(0, c)).epsilon(1e-5));
}

TEST_CASE("the inference fast path gives the training pass's probabilities, each row alone or grouped", "[model]") {
  ModelConfig cfg = tiny_config(0.0);
  cfg.max_len = 40;
  cfg.type_vocab_size = GENERATE(0, 2);  // zibert's own embeddings, or an imported checkpoint's with token types
  if (GENERATE(false, true)) cfg.readings = tiny_readings();  // and with the reading channel
  Bert<float> net(cfg);
  net.init_weights(5);
  // 60 sequences of 37 tokens: 2220 rows, more than one pass of kPredictRows
  // as the predictor cuts them; here the fast path runs them whole.
  Batch batch;
  batch.size = 60;
  batch.seq = 37;
  Rng rng(9);
  for (Index b = 0; b < batch.size; ++b) {
    const Index len = 3 + Index(rng.uniform() * 34);
    for (Index t = 0; t < batch.seq; ++t)
      batch.ids.push_back(t == 0 ? kCls : t < len - 1 ? 5 + std::int32_t(rng.uniform() * 7) : t == len - 1 ? kSep : kPadId);
  }
  REQUIRE(kPredictRows / batch.seq < batch.size);
  ModelCache<float> whole_cache;
  InferenceCache<float> group_cache;
  net.forward(batch, whole_cache, nullptr);
  const MatR<float> whole = CMatMap<float>(whole_cache.probs.data.data(), batch.size, cfg.labels);
  const MatR<float> grouped = infer_forward(net, batch, group_cache);
  // The inference pass (residual and LayerNorm fused, nothing kept for
  // backward, the last layer's [CLS] attention folded) computes what the
  // training pass does, up to rounding.
  CHECK((grouped - whole).cwiseAbs().maxCoeff() < 1e-6f);
  // With the weights packed once (what the Predictor runs on): the same bits.
  InferenceCache<float> packed_cache;
  const MatR<float> packed = infer_forward<float>(net, batch, packed_cache, nullptr, F32Net(net));
  CHECK(packed == grouped);
  // And every row is computed the same way whatever shares its pass: equal
  // bits with the native product, equal to rounding with Eigen's.
  InferenceCache<float> one_cache;
  for (Index b : {Index(0), Index(17), batch.size - 1}) {
    const MatR<float> alone = infer_forward(net, batch.part(b, 1), one_cache);
    if (gemm_is_native())
      CHECK(alone.row(0) == grouped.row(b));
    else
      CHECK((alone.row(0) - grouped.row(b)).cwiseAbs().maxCoeff() < 1e-6f);
  }
  // What an inference pass leaves cannot be differentiated: backward takes
  // a training pass's cache only, so this is a compile-time guarantee.
  STATIC_REQUIRE_FALSE(std::is_invocable_v<decltype(&Bert<float>::backward), Bert<float>&, const Batch&,
                                           InferenceCache<float>&>);
}

namespace {

// Every layer's output of an inference pass over tiny_batch (every row but
// the folded last layer's, which has the [CLS] rows only), with the first
// layer's projections gathered from tables or multiplied out.
template <class T>
MatR<T> inference_hidden(const Bert<T>& net, const EmbeddingTables<T>* tables) {
  InferenceCache<T> cache;
  Batch batch = tiny_batch();
  batch.labels.clear();
  infer_forward(net, batch, cache, tables);
  const Index n = batch.size * batch.seq, rows = net.config().layers * n + (net.config().tie_qk ? n : batch.size);
  return CMatMap<T>(cache.hidden.data.data(), rows, net.config().dim);
}

template <class T>
void check_tabulated(ModelConfig cfg, double tolerance) {
  Bert<T> net(cfg, false);
  AlignedVector<double> values(net.params().size());
  fill_uniform(values.data(), values.size(), 31, -0.5, 0.5);
  for (std::size_t i = 0; i < values.size(); ++i) net.params()[i] = T(values[i]);
  // Embeddings far from zero mean and LayerNorm weights far from 1 and 0:
  // tables that skipped the centring or γ and β would be far off.
  for (const char* name : {"bert.embeddings.word_embeddings.weight", "bert.embeddings.position_embeddings.weight"}) {
    if (!cfg.position && std::string(name).find("position") != std::string::npos) continue;
    const TensorInfo& t = net.tensor(name);
    for (std::size_t i = 0; i < t.size; ++i) net.params()[t.offset + i] += T(i % cfg.dim == 0 ? 2.0 : 0.7);
  }
  for (const char* name : {"bert.embeddings.LayerNorm.weight", "bert.embeddings.LayerNorm.bias"}) {
    const TensorInfo& t = net.tensor(name);
    for (std::size_t i = 0; i < t.size; ++i) net.params()[t.offset + i] = T(0.5 + 0.25 * double(i % 5));
  }
  const MatR<T> direct = inference_hidden<T>(net, nullptr);
  const auto tables = embedding_tables(net);
  REQUIRE(tables);
  // A row the batch needs that was not filled is an error, not garbage.
  const std::vector<std::int32_t> ids = tiny_batch().ids;
  CHECK_THROWS_WITH(inference_hidden(net, tables.get()), Catch::Contains("lack a row"));
  // Rows filled one at a time and all at once are the same, bit for bit.
  const auto one_by_one = embedding_tables(net);
  for (std::int32_t id : ids) tabulate(net, *one_by_one, &id, 1);
  tabulate(net, *tables, ids.data(), ids.size());
  const Index width = tables->width;
  for (std::int32_t id : ids)
    for (Index j = 0; j < width; ++j) CHECK(tables->word[id * width + j] == one_by_one->word[id * width + j]);
  const MatR<T> gathered = inference_hidden(net, tables.get());
  // Every layer's output, [PAD] rows included, equal up to rounding.
  CHECK((gathered - direct).cwiseAbs().maxCoeff() < tolerance);
  // The embeddings themselves (block 0) are computed the one way.
  const Index n = 2 * 6;
  CHECK(gathered.topRows(n) == direct.topRows(n));
  // Tables of another model (a copy: other parameters) are refused.
  const Bert<T> copy = net;
  CHECK_THROWS_WITH(inference_hidden(copy, tables.get()), Catch::Contains("tables of another model"));
}

}  // namespace

TEST_CASE("tabulated first-layer projections give the inference pass of the multiplied-out ones", "[model]") {
  ModelConfig cfg = tiny_config(0.0);
  SECTION("float") { check_tabulated<float>(cfg, 1e-5); }
  SECTION("double") { check_tabulated<double>(cfg, 1e-12); }
  SECTION("tied query and key projections") {
    cfg.tie_qk = true;
    check_tabulated<float>(cfg, 1e-5);
  }
  SECTION("without position embeddings") {
    cfg.position = false;
    check_tabulated<float>(cfg, 1e-5);
  }
  SECTION("with token type embeddings (an imported checkpoint's)") {
    cfg.type_vocab_size = 2;
    check_tabulated<float>(cfg, 1e-5);
    check_tabulated<double>(cfg, 1e-12);
  }
  SECTION("with the reading channel") {
    cfg.readings = tiny_readings();
    check_tabulated<float>(cfg, 1e-5);
    check_tabulated<double>(cfg, 1e-12);
  }
  SECTION("too large to tabulate") {
    Bert<float> net(cfg, false);
    const std::size_t bytes = (12 + 8) * 24 * sizeof(float);  // (vocab + positions) x 3C
    CHECK_FALSE(embedding_tables(net, bytes - 1));
    CHECK(embedding_tables(net, bytes));
  }
}

TEST_CASE("overfitting 16 examples drives the training loss below 0.01", "[model][training]") {
  const ModelConfig cfg = model_shape(20, 10, 16, 2, 32, 2, 2, 0.0);
  Bert<float> net(cfg);
  net.init_weights(11);
  Rng rng(99);
  std::vector<std::vector<std::int32_t>> seqs;
  std::vector<std::int32_t> labels;
  for (int i = 0; i < 16; ++i) {
    std::vector<std::int32_t> ids;
    std::size_t len = 3 + rng.below(5);
    for (std::size_t j = 0; j < len; ++j) ids.push_back(static_cast<std::int32_t>(5 + rng.below(15)));
    seqs.push_back(with_specials(ids, cfg.max_len, SpecialIds{}));
    labels.push_back(static_cast<std::int32_t>(rng.below(2)));
  }
  std::vector<const std::vector<std::int32_t>*> ptrs;
  for (const auto& s : seqs) ptrs.push_back(&s);
  Batch batch = pack_batch(ptrs, labels);
  AdamWConfig ac;
  ac.lr = 3e-3;
  ac.weight_decay = 0.0;
  AdamW<float> adam(ac, net.layout());
  ModelCache<float> cache;
  float loss = 0;
  for (int step = 0; step < 300; ++step) {
    net.zero_grad();
    loss = net.forward(batch, cache, nullptr);
    net.backward(batch, cache);
    clip_grad_norm(net.grads(), 1.0);
    adam.step(net.params(), net.grads(), ac.lr);
  }
  CHECK(loss < 0.01f);
}
