// Eigen's product behind eigen_matmul (gemm.hpp): its own file, so that the
// double one compiles only where the tests need it (zibert_f64).
#include "zibert/nn/gemm.hpp"

namespace zibert {

template <class T>
void eigen_matmul(const CRef<T>& a, bool ta, const CRef<T>& b, bool tb, Ref<T> c, bool accumulate,
                  const T* bias) {
  if (bias && !accumulate) {
    c.rowwise() = Eigen::Map<const Eigen::Matrix<T, 1, Eigen::Dynamic>>(bias, c.cols());
    accumulate = true;
  }
  auto assign = [&](const auto& product) {
    if (accumulate)
      c.noalias() += product;
    else
      c.noalias() = product;
  };
  if (ta && tb) assign(a.transpose() * b.transpose());
  else if (ta) assign(a.transpose() * b);
  else if (tb) assign(a * b.transpose());
  else assign(a * b);
}

template void eigen_matmul<ZIBERT_REAL>(const CRef<ZIBERT_REAL>&, bool, const CRef<ZIBERT_REAL>&, bool,
                                        Ref<ZIBERT_REAL>, bool, const ZIBERT_REAL*);

}  // namespace zibert
