// Every layer's hand-written backward against central finite differences.
#include <catch2/catch.hpp>

#include "gradcheck.hpp"
#include "zibert/nn/attention.hpp"
#include "zibert/nn/gemm.hpp"
#include "zibert/nn/layers.hpp"

using namespace zibert;
using namespace zibert::test;
using M = MatR<double>;

namespace {
constexpr double kTol = 1e-6;

// loss = Σ y ⊙ r for a fixed random r, so dL/dy = r.
double weighted_sum(const M& y, const M& r) { return (y.array() * r.array()).sum(); }

// An attention layer without gradients over w: Wqkv (3C, C), bqkv, Wo (C, C), bo.
template <class T>
SelfAttention<T> attention_over(std::vector<T>& w, Index c, Index heads) {
  SelfAttention<T> attn;
  attn.qkv = {{w.data(), nullptr, 3 * c, c}, {w.data() + 3 * c * c, nullptr, 3 * c, 1}};
  attn.output = {{w.data() + 3 * c * c + 3 * c, nullptr, c, c}, {w.data() + 4 * c * c + 3 * c, nullptr, c, 1}};
  attn.heads = heads;
  return attn;
}
}  // namespace

TEST_CASE("Linear backward matches finite differences", "[layers][gradcheck]") {
  const Index n = 5, in = 4, out = 3;
  M x = uniform_matrix(n, in, 1), r = uniform_matrix(n, out, 2);
  std::vector<double> w(out * in + out), g(w.size(), 0.0);
  fill_uniform(w.data(), w.size(), 3);
  Linear<double> lin{{w.data(), g.data(), out, in}, {w.data() + out * in, g.data() + out * in, out, 1}};
  auto loss = [&] {
    M y(n, out);
    lin.forward(x, y);
    return weighted_sum(y, r);
  };
  M dx(n, in);
  Ref<double> dx_ref(dx);
  lin.backward(x, r, &dx_ref);
  auto num_w = numeric_gradient(w.data(), w.size(), loss);
  CHECK(relative_error(g.data(), num_w.data(), out * in) <= kTol);
  CHECK(relative_error(g.data() + out * in, num_w.data() + out * in, out) <= kTol);
  auto num_x = numeric_gradient(x.data(), static_cast<std::size_t>(x.size()), loss);
  CHECK(relative_error(dx.data(), num_x.data(), num_x.size()) <= kTol);

  SECTION("backward accumulates into existing gradients") {
    std::vector<double> before = g;
    lin.backward(x, r, nullptr);
    for (std::size_t i = 0; i < g.size(); ++i) CHECK(g[i] == Approx(2 * before[i]));
  }
}

TEST_CASE("LayerNorm backward matches finite differences", "[layers][gradcheck]") {
  const Index n = 4, c = 6;
  M x = uniform_matrix(n, c, 4, -2, 2), r = uniform_matrix(n, c, 5);
  std::vector<double> w(2 * c), g(2 * c, 0.0);
  fill_uniform(w.data(), w.size(), 6, 0.5, 1.5);
  LayerNorm<double> ln{{w.data(), g.data(), c, 1}, {w.data() + c, g.data() + c, c, 1}, 1e-12};
  M xhat(n, c), rstd(n, 1), y(n, c);
  auto loss = [&] {
    ln.forward(x, y, xhat, rstd);
    return weighted_sum(y, r);
  };
  loss();
  M dx(n, c);
  Buffer<double> scratch;
  ln.backward(r, xhat, rstd, dx, scratch);
  auto num_w = numeric_gradient(w.data(), w.size(), loss);
  CHECK(relative_error(g.data(), num_w.data(), c) <= kTol);
  CHECK(relative_error(g.data() + c, num_w.data() + c, c) <= kTol);
  auto num_x = numeric_gradient(x.data(), static_cast<std::size_t>(x.size()), loss);
  CHECK(relative_error(dx.data(), num_x.data(), num_x.size()) <= kTol);
}

TEST_CASE("GELU backward matches finite differences", "[layers][gradcheck]") {
  M x = uniform_matrix(3, 7, 7, -3, 3), r = uniform_matrix(3, 7, 8);
  auto loss = [&] {
    M y(3, 7);
    gelu_forward<double>(x, y);
    return weighted_sum(y, r);
  };
  M dx(3, 7);
  gelu_backward<double>(x, r, dx);
  auto num = numeric_gradient(x.data(), static_cast<std::size_t>(x.size()), loss);
  CHECK(relative_error(dx.data(), num.data(), num.size()) <= kTol);
  SECTION("exact erf form") {
    M one(1, 1), y(1, 1);
    one(0, 0) = 1.0;
    gelu_forward<double>(one, y);
    CHECK(y(0, 0) == Approx(0.8413447460685429).epsilon(1e-14));
  }
}

TEST_CASE("cross-entropy backward matches finite differences", "[layers][gradcheck]") {
  M logits = uniform_matrix(4, 3, 9, -2, 2);
  std::vector<std::int32_t> labels{0, 2, 1, 2};
  M probs(4, 3);
  auto loss = [&] { return cross_entropy_forward<double>(logits, labels.data(), probs); };
  loss();
  M d(4, 3);
  cross_entropy_backward<double>(probs, labels.data(), d);
  auto num = numeric_gradient(logits.data(), static_cast<std::size_t>(logits.size()), loss);
  CHECK(relative_error(d.data(), num.data(), num.size()) <= kTol);
}

TEST_CASE("dropout masks are seeded and scaled and deterministic", "[layers]") {
  DropoutRng rng{7, 3, 0.25};
  DropoutMask a, b, c, rows;
  dropout_mask(rng, 1, 50, 40, a);
  dropout_mask(rng, 1, 50, 40, b);
  dropout_mask(rng, 2, 50, 40, c);
  CHECK(a.keep == b.keep);
  CHECK(a.keep != c.keep);
  M x = M::Constant(50, 40, 3.0);
  a.apply(x);
  double zeros = (x.array() == 0.0).cast<double>().sum() / double(x.size());
  CHECK(zeros == Approx(0.25).margin(0.03));
  CHECK(((x.array() == 0.0) || ((x.array() - 3.0 / 0.75).abs() < 1e-12)).all());
  // Some rows only draw as those rows of the whole.
  const std::vector<std::int32_t> listed{4, 17};
  dropout_mask(rng, 1, 40, rows, 10, listed);
  for (Index i = 0; i < 2; ++i)
    for (Index j = 0; j < 40; ++j) CHECK(rows.keep[i * 40 + j] == a.keep[(10 + listed[i]) * 40 + j]);
  M wrong(3, 40);
  CHECK_THROWS(a.apply(wrong));
}

TEST_CASE("attention backward matches finite differences, weights kept or recomputed, and padded keys get no weight",
          "[layers][gradcheck]") {
  const Index batch = 2, seq = 5, c = 6, heads = 2, n = batch * seq;
  M x = uniform_matrix(n, c, 10), r = uniform_matrix(n, c, 11);
  std::vector<double> w(3 * c * c + 3 * c + c * c + c), g(w.size(), 0.0);
  fill_uniform(w.data(), w.size(), 12, -0.6, 0.6);
  double* p = w.data();
  double* q = g.data();
  SelfAttention<double> attn;
  attn.qkv = {{p, q, 3 * c, c}, {p + 3 * c * c, q + 3 * c * c, 3 * c, 1}};
  attn.output = {{p + 3 * c * c + 3 * c, q + 3 * c * c + 3 * c, c, c},
                 {p + 4 * c * c + 3 * c, q + 4 * c * c + 3 * c, c, 1}};
  attn.heads = heads;
  // The weights kept from forward, or recomputed in backward.
  attn.kept_weights = GENERATE(Index(kKeptWeights), Index(0));  // values, not a reference to the constant
  INFO("kept_weights " << attn.kept_weights);
  // sequence 0 is full, sequence 1 has two [PAD] keys at the end
  std::vector<std::uint8_t> valid{1, 1, 1, 1, 1, 1, 1, 1, 0, 0};
  AttentionCache<double> cache;
  auto loss = [&] {
    M y(n, c);
    attn.forward(x, batch, seq, valid.data(), cache, y);
    return weighted_sum(y, r);
  };
  loss();
  for (Index b = 0; b < batch; ++b) {
    M probs(heads * seq, seq);
    attn.weights(cache, batch, seq, valid.data(), b, probs);
    for (Index row = 0; row < probs.rows(); ++row) CHECK(probs.row(row).sum() == Approx(1.0).epsilon(1e-12));
    if (b == 1)
      for (Index row = 0; row < 2 * seq; ++row) {  // sequence 1's [PAD] keys, both heads
        CHECK(probs(row, 3) == 0.0);
        CHECK(probs(row, 4) == 0.0);
      }
  }
  M dx(n, c);
  attn.backward(x, r, batch, seq, valid.data(), cache, dx);
  auto num_w = numeric_gradient(w.data(), w.size(), loss);
  CHECK(relative_error(g.data(), num_w.data(), 3 * c * c) <= kTol);                        // Wqkv
  CHECK(relative_error(g.data() + 3 * c * c, num_w.data() + 3 * c * c, 3 * c) <= kTol);    // bqkv
  CHECK(relative_error(g.data() + 3 * c * c + 3 * c, num_w.data() + 3 * c * c + 3 * c, c * c + c) <= kTol);  // Wo, bo
  auto num_x = numeric_gradient(x.data(), static_cast<std::size_t>(x.size()), loss);
  CHECK(relative_error(dx.data(), num_x.data(), num_x.size()) <= kTol);
}

TEST_CASE("attention on listed query rows gives those rows of the full one, its backward finite differences",
          "[layers][gradcheck]") {
  // Sequence 0 has three query rows, sequence 1 none, sequence 2 two and
  // two [PAD] keys: a last layer under the masked-LM loss.
  const Index batch = 3, seq = 5, c = 6, heads = 2, n = batch * seq;
  const std::vector<std::int32_t> rows{1, 3, 4, 11, 12};
  const auto m = static_cast<Index>(rows.size());
  M x = uniform_matrix(n, c, 13), r = uniform_matrix(m, c, 14);
  std::vector<double> w(4 * c * c + 4 * c), g(w.size(), 0.0);
  fill_uniform(w.data(), w.size(), 15, -0.6, 0.6);
  SelfAttention<double> attn = attention_over(w, c, heads);
  attn.qkv.weight.grad = g.data();
  attn.qkv.bias.grad = g.data() + 3 * c * c;
  attn.output.weight.grad = g.data() + 3 * c * c + 3 * c;
  attn.output.bias.grad = g.data() + 4 * c * c + 3 * c;
  const std::vector<std::uint8_t> valid{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0};
  AttentionCache<double> cache;
  M full(n, c);
  attn.forward(x, batch, seq, valid.data(), cache, full);
  auto loss = [&] {
    M y(m, c);
    attn.forward_rows(x, seq, rows, valid.data(), cache, y);
    return weighted_sum(y, r);
  };
  M y(m, c);
  attn.forward_rows(x, seq, rows, valid.data(), cache, y);
  for (Index i = 0; i < m; ++i) CHECK((y.row(i) - full.row(rows[i])).cwiseAbs().maxCoeff() < 1e-12);
  M dx(n, c);
  attn.backward_rows(x, r, seq, rows, cache, dx);
  auto num_w = numeric_gradient(w.data(), w.size(), loss);
  CHECK(relative_error(g.data(), num_w.data(), w.size()) <= kTol);
  auto num_x = numeric_gradient(x.data(), static_cast<std::size_t>(x.size()), loss);
  CHECK(relative_error(dx.data(), num_x.data(), num_x.size()) <= kTol);
  CHECK(dx.middleRows(seq, seq).isZero(0.0));  // sequence 1 has no query: its rows get no gradient
  SECTION("query rows must be ascending") {
    const std::vector<std::int32_t> unordered{3, 1};
    M y2(2, c);
    CHECK_THROWS_WITH(attn.forward_rows(x, seq, unordered, valid.data(), cache, y2), Catch::Contains("ascending"));
  }
}

TEST_CASE("float attention weights do not depend on which softmax batch a query row falls in", "[layers]") {
  // The float softmax takes a head's query rows four at a time and the rest
  // one by one. Rows 0 and 6 of a 7-token sequence have equal inputs, so
  // equal queries; one goes through the four-row path, the other alone.
  const Index batch = 1, seq = 7, c = 8, heads = 2, n = batch * seq;
  M xd = uniform_matrix(n, c, 21);
  xd.row(6) = xd.row(0);
  std::vector<double> wd(4 * c * c + 4 * c);
  fill_uniform(wd.data(), wd.size(), 22, -0.6, 0.6);
  auto run = [&](auto zero) {
    using T = decltype(zero);
    std::vector<T> w(wd.begin(), wd.end());
    const SelfAttention<T> attn = attention_over(w, c, heads);
    std::vector<std::uint8_t> valid(n, 1);
    AttentionCache<T> cache;
    MatR<T> y(n, c);
    attn.forward(xd.cast<T>(), batch, seq, valid.data(), cache, y);
    MatR<T> probs(heads * seq, seq);
    attn.weights(cache, batch, seq, valid.data(), 0, probs);
    return probs;
  };
  const MatR<float> probs = run(0.0f);
  const M exact = run(0.0);
  // Equal bits where the product is zibert's own (rows computed alike
  // wherever they sit); Eigen's may round the two query rows' scores apart.
  for (Index h = 0; h < heads; ++h) {
    if (gemm_is_native())
      CHECK(probs.row(h * seq) == probs.row(h * seq + 6));
    else
      CHECK((probs.row(h * seq) - probs.row(h * seq + 6)).cwiseAbs().maxCoeff() < 1e-6f);
  }
  CHECK((probs.cast<double>() - exact).cwiseAbs().maxCoeff() < 1e-6);
}

TEST_CASE("inference's attention paths equal the plain ones up to rounding", "[layers]") {
  // Three sequences: full, trailing [PAD] keys (the prefix softmax), a [PAD]
  // key in the middle (the masked softmax).
  const Index batch = 3, seq = 6, c = 8, heads = 2, n = batch * seq;
  const M xd = uniform_matrix(n, c, 31);
  std::vector<double> wd(4 * c * c + 4 * c);
  fill_uniform(wd.data(), wd.size(), 32, -0.6, 0.6);
  const std::vector<std::uint8_t> valid{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 1, 1, 0, 1, 1, 0};
  enum Path { normalised, unnormalised, cls, cls_folded };
  auto run = [&](auto zero, Path path, const M& x) {
    using T = decltype(zero);
    std::vector<T> w(wd.begin(), wd.end());
    const SelfAttention<T> attn = attention_over(w, c, heads);
    AttentionCache<T> cache;
    MatR<T> y(path == normalised || path == unnormalised ? n : batch, c);
    if (path == cls) {
      std::vector<std::int32_t> rows;
      for (Index b = 0; b < batch; ++b) rows.push_back(static_cast<std::int32_t>(b * seq));
      attn.forward_rows(x.cast<T>(), seq, rows, valid.data(), cache, y);
    } else if (path == cls_folded) {
      attn.forward_cls_folded(x.cast<T>(), batch, seq, valid.data(), cache, y);
    } else if (path == normalised) {
      attn.forward(x.cast<T>(), batch, seq, valid.data(), cache, y);
    } else {
      attn.qkv.forward(x.cast<T>(), cache.qkv.view(n, 3 * c));
      attn.attend(batch, seq, valid.data(), cache, WeightRows::unnormalised);
      attn.output.forward(cache.ctx.view(n, c), y);
    }
    return y;
  };
  SECTION("attention with unnormalised weight rows (predict) normalises after the product") {
    const M exact = run(0.0, normalised, xd);
    CHECK((run(0.0, unnormalised, xd) - exact).cwiseAbs().maxCoeff() < 1e-12);
    CHECK((run(0.0f, unnormalised, xd).cast<double>() - exact).cwiseAbs().maxCoeff() < 1e-5);
    CHECK((run(0.0f, normalised, xd).cast<double>() - exact).cwiseAbs().maxCoeff() < 1e-5);
  }
  SECTION("the folded [CLS] attention has no keys or values") {
    const M exact = run(0.0, cls, xd);
    CHECK((run(0.0, cls_folded, xd) - exact).cwiseAbs().maxCoeff() < 1e-12);
    CHECK((run(0.0f, cls_folded, xd).cast<double>() - exact).cwiseAbs().maxCoeff() < 1e-5);
    CHECK((run(0.0f, cls, xd).cast<double>() - exact).cwiseAbs().maxCoeff() < 1e-5);
    // A [PAD] key changes nothing: the middle one's row can be anything.
    M changed = xd;
    changed.row(2 * seq + 2).setConstant(50.0);
    CHECK((run(0.0, cls_folded, changed) - exact).cwiseAbs().maxCoeff() < 1e-12);
  }
}

TEST_CASE("binary cross-entropy backward matches finite differences and the loss is stable", "[layers][gradcheck][multi-label]") {
  M logits = uniform_matrix(4, 3, 19, -3, 3);
  std::vector<std::uint8_t> targets{1, 0, 1, 0, 0, 0, 1, 1, 1, 0, 1, 0};
  M probs(4, 3);
  auto loss = [&] { return binary_cross_entropy_forward<double>(logits, targets.data(), probs); };
  const double l = loss();
  // Σ_labels −[y ln σ + (1−y) ln(1−σ)], averaged over rows, by the textbook formula.
  double expect = 0;
  for (Index b = 0; b < 4; ++b)
    for (Index k = 0; k < 3; ++k) {
      const double s = 1 / (1 + std::exp(-logits(b, k)));
      CHECK(probs(b, k) == Approx(s).epsilon(1e-15));
      expect -= targets[b * 3 + k] ? std::log(s) : std::log(1 - s);
    }
  CHECK(l == Approx(expect / 4).epsilon(1e-14));
  M d(4, 3);
  binary_cross_entropy_backward<double>(probs, targets.data(), d);
  auto num = numeric_gradient(logits.data(), static_cast<std::size_t>(logits.size()), loss);
  CHECK(relative_error(d.data(), num.data(), num.size()) <= kTol);
  SECTION("huge logits give finite losses and exact 0/1 probabilities") {
    M big(1, 2);
    big << 800, -800;
    std::vector<std::uint8_t> t{0, 1};
    M p(1, 2);
    const double bl = binary_cross_entropy_forward<double>(big, t.data(), p);
    CHECK(bl == Approx(1600));
    CHECK(p(0, 0) == 1.0);
    CHECK(p(0, 1) == 0.0);
  }
}

TEST_CASE("label-smoothed cross-entropy: the loss by hand, its backward against finite differences, ε = 0 unchanged",
          "[layers][gradcheck]") {
  M logits = uniform_matrix(4, 3, 29, -2, 2);
  std::vector<std::int32_t> labels{0, 2, 1, 2};
  M probs(4, 3);
  const double eps = 0.1;
  auto loss = [&] { return cross_entropy_forward<double>(logits, labels.data(), probs, eps); };
  const double l = loss();
  double expect = 0;  // −Σ_c q_c ln p_c with q = 0.9·onehot + 0.1/3
  for (Index b = 0; b < 4; ++b)
    for (Index c = 0; c < 3; ++c) expect -= ((c == labels[b] ? 0.9 : 0.0) + eps / 3) * std::log(probs(b, c));
  CHECK(l == Approx(expect / 4).epsilon(1e-13));
  M d(4, 3);
  cross_entropy_backward<double>(probs, labels.data(), d, eps);
  auto num = numeric_gradient(logits.data(), static_cast<std::size_t>(logits.size()), loss);
  CHECK(relative_error(d.data(), num.data(), num.size()) <= kTol);
  // ε = 0 is the plain loss and gradient, bit for bit.
  M p0(4, 3), p1(4, 3), d0(4, 3), d1(4, 3);
  CHECK(cross_entropy_forward<double>(logits, labels.data(), p0, 0.0) ==
        cross_entropy_forward<double>(logits, labels.data(), p1));
  cross_entropy_backward<double>(p0, labels.data(), d0, 0.0);
  cross_entropy_backward<double>(p1, labels.data(), d1);
  CHECK(d0 == d1);
}

TEST_CASE("cross-entropy on rows of no label (train --outliers): the uniform target by hand, backward against finite "
          "differences, with and without label smoothing", "[layers][gradcheck]") {
  M logits = uniform_matrix(5, 3, 31, -2, 2);
  std::vector<std::int32_t> labels{0, kNoLabel, 1, kNoLabel, 2};
  M probs(5, 3);
  for (const double eps : {0.0, 0.1}) {
    INFO("label smoothing " << eps);
    auto loss = [&] { return cross_entropy_forward<double>(logits, labels.data(), probs, eps); };
    const double l = loss();
    double expect = 0;  // −Σ_c q_c ln p_c: q uniform on the rows of no label, (1 − ε)·onehot + ε/K on the others
    for (Index b = 0; b < 5; ++b)
      for (Index c = 0; c < 3; ++c) {
        const double q = labels[b] == kNoLabel ? 1.0 / 3 : (c == labels[b] ? 1 - eps : 0.0) + eps / 3;
        expect -= q * std::log(probs(b, c));
      }
    CHECK(l == Approx(expect / 5).epsilon(1e-13));
    M d(5, 3);
    cross_entropy_backward<double>(probs, labels.data(), d, eps);
    auto num = numeric_gradient(logits.data(), static_cast<std::size_t>(logits.size()), loss);
    CHECK(relative_error(d.data(), num.data(), num.size()) <= kTol);
    for (Index b : {1, 3}) CHECK(std::abs(d.row(b).sum()) < 1e-15);  // p − 1/K sums to zero
  }
}

TEST_CASE("distillation loss: T²·KL to the teacher plus α·cross-entropy on gold rows, by hand, and backward against "
          "finite differences", "[layers][gradcheck][distill]") {
  M logits = uniform_matrix(4, 3, 41, -3, 3);
  SoftTargets soft;
  soft.probs = {0.7f, 0.2f, 0.1f, 0.05f, 0.05f, 0.9f, 1.0f, 0.0f, 0.0f, 0.3f, 0.3f, 0.4f};
  std::vector<std::int32_t> labels{0, kNoGold, 1, kNoGold};
  M probs(4, 3);
  for (const auto& [t, alpha] : {std::pair{1.0, 0.0}, std::pair{2.0, 0.5}, std::pair{4.0, 1.0}}) {
    INFO("temperature " << t << ", alpha " << alpha);
    soft.temperature = t;
    soft.alpha = alpha;
    auto loss = [&] { return distillation_forward<double>(logits, soft, labels.data(), probs); };
    const double l = loss();
    double expect = 0;
    for (Index b = 0; b < 4; ++b) {
      const Eigen::RowVectorXd zt = logits.row(b) / t;
      const double lse_t = std::log(zt.array().exp().sum()), lse = std::log(logits.row(b).array().exp().sum());
      for (Index c = 0; c < 3; ++c) {
        const double p = soft.probs[static_cast<std::size_t>(b * 3 + c)];
        if (p > 0) expect += t * t * p * (std::log(p) - (zt(c) - lse_t));
      }
      if (labels[b] != kNoGold) expect -= alpha * (logits(b, labels[b]) - lse);
    }
    CHECK(l == Approx(expect / 4).epsilon(1e-12));
    CHECK(probs.row(0).sum() == Approx(1.0));
    M d(4, 3);
    distillation_backward<double>(logits, soft, labels.data(), probs, d);
    auto num = numeric_gradient(logits.data(), static_cast<std::size_t>(logits.size()), loss);
    CHECK(relative_error(d.data(), num.data(), num.size()) <= kTol);
  }
  // A student that matches the teacher at temperature 1, with no gold rows, has loss 0 and no gradient.
  M matched(1, 3);
  matched << std::log(0.7), std::log(0.2), std::log(0.1);
  SoftTargets same{{0.7f, 0.2f, 0.1f}, 1.0, 0.5};
  const std::int32_t none = kNoGold;
  M p1(1, 3), d1(1, 3);
  CHECK(std::abs(distillation_forward<double>(matched, same, &none, p1)) < 1e-7);
  distillation_backward<double>(matched, same, &none, p1, d1);
  CHECK(d1.cwiseAbs().maxCoeff() < 1e-7);
  SoftTargets short_targets{{0.5f, 0.5f}, 2.0, 0.5};
  CHECK_THROWS_WITH(distillation_forward<double>(matched, short_targets, &none, p1),
                    Catch::Contains("B×K soft targets"));
}
