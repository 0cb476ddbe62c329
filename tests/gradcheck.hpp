// Central finite differences in double precision, for the gradient tests.
#pragma once
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "zibert/base/random.hpp"
#include "zibert/nn/tensor.hpp"

namespace zibert::test {

// ‖a − n‖ / max(‖a‖, ‖n‖): the relative error of a whole gradient tensor.
inline double relative_error(const double* analytic, const double* numeric, std::size_t n) {
  double diff = 0, na = 0, nn = 0;
  for (std::size_t i = 0; i < n; ++i) {
    diff += (analytic[i] - numeric[i]) * (analytic[i] - numeric[i]);
    na += analytic[i] * analytic[i];
    nn += numeric[i] * numeric[i];
  }
  double denom = std::max(std::sqrt(std::max(na, nn)), 1e-300);
  return std::sqrt(diff) / denom;
}

inline double norm(const double* x, std::size_t n) {
  double s = 0;
  for (std::size_t i = 0; i < n; ++i) s += x[i] * x[i];
  return std::sqrt(s);
}

// Numeric gradient of loss() with respect to x[0, n): the five-point central
// difference, whose O(h⁴) truncation error leaves rounding as the only noise.
inline std::vector<double> numeric_gradient(double* x, std::size_t n, const std::function<double()>& loss,
                                            double h = 1e-4) {
  std::vector<double> g(n);
  for (std::size_t i = 0; i < n; ++i) {
    double old = x[i];
    auto at = [&](double delta) {
      x[i] = old + delta;
      return loss();
    };
    g[i] = (-at(2 * h) + 8 * at(h) - 8 * at(-h) + at(-2 * h)) / (12 * h);
    x[i] = old;
  }
  return g;
}

// One parameter tensor's analytic gradient against its numeric one: relative
// error ≤ 1e-6; for a key bias, whose gradient is zero in exact arithmetic
// (softmax(q·(k + b)) = softmax(q·k)), both must be zero instead.
inline void check_tensor_gradient(const std::string& name, const double* analytic, const std::vector<double>& numeric) {
  if (name.ends_with("attention.self.key.bias")) {
    CHECK(norm(analytic, numeric.size()) < 1e-12);
    CHECK(norm(numeric.data(), numeric.size()) < 1e-8);
    return;
  }
  CHECK(relative_error(analytic, numeric.data(), numeric.size()) <= 1e-6);
}

inline void fill_uniform(double* x, std::size_t n, std::uint64_t seed, double lo = -1, double hi = 1) {
  Rng rng(seed);
  for (std::size_t i = 0; i < n; ++i) x[i] = lo + (hi - lo) * rng.uniform();
}

// A rows × cols matrix of fill_uniform's values in [lo, hi), as T.
template <class T = double>
MatR<T> uniform_matrix(Index rows, Index cols, std::uint64_t seed, double lo = -1, double hi = 1) {
  MatR<double> m(rows, cols);
  fill_uniform(m.data(), static_cast<std::size_t>(m.size()), seed, lo, hi);
  return m.cast<T>();
}

}  // namespace zibert::test
