// The float products' shared check: random operands for every transposition,
// accumulation and bias over the given sizes, against a double product.
#pragma once
#include <algorithm>
#include <cstdint>
#include <initializer_list>

#include "gradcheck.hpp"
#include "zibert/nn/gemm.hpp"

namespace zibert::test {

// product(m, n, k, a, b, c, accumulate, bias or nullptr, threads) computes C
// (=|+=) op(A) op(B) (+ bias) in place; the reference is the double product
// of op(round(A)) op(round(B)), where round is what the product does to its
// operands (the identity for float32). Returns the largest |C − reference|
// divided by the depth: 2 threads for m > 100 rows.
template <class Product, class Round>
double worst_product_error(std::initializer_list<Index> ms, std::initializer_list<Index> ns,
                           std::initializer_list<Index> ks, std::uint64_t seed, Product product, Round round) {
  using MF = MatR<float>;
  using MD = MatR<double>;
  double worst = 0;
  for (Index m : ms)
    for (Index n : ns)
      for (Index k : ks)
        for (int variant = 0; variant < 8; ++variant) {
          const bool ta = variant & 1, tb = variant & 2, acc = variant & 4;
          MF a = ta ? uniform_matrix<float>(k, m, seed++) : uniform_matrix<float>(m, k, seed++);
          MF b = tb ? uniform_matrix<float>(n, k, seed++) : uniform_matrix<float>(k, n, seed++);
          MF c = uniform_matrix<float>(m, n, seed++);
          const Eigen::RowVectorXf bias = uniform_matrix<float>(1, n, seed++);
          const bool with_bias = !acc && (m + n + k) % 2 == 1;
          const MD ad = a.unaryExpr(round).template cast<double>(), bd = b.unaryExpr(round).template cast<double>();
          MD want = (ta ? MD(ad.transpose()) : ad) * (tb ? MD(bd.transpose()) : bd);
          if (acc) want += c.cast<double>();
          if (with_bias) want.rowwise() += bias.cast<double>();
          product(m, n, k, GemmOperand{a.data(), a.cols(), ta}, GemmOperand{b.data(), b.cols(), tb}, c, acc,
                  with_bias ? bias.data() : nullptr, m > 100 ? 2 : 1);
          worst = std::max(worst, (c.cast<double>() - want).cwiseAbs().maxCoeff() / static_cast<double>(std::max<Index>(k, 1)));
        }
  return worst;
}

}  // namespace zibert::test
