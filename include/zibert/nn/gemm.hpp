// Single-precision matrix products for the model's products (the Linear layers
// and attention products). On CPUs with AVX-512 a packed, cache-blocked
// kernel of 14 x 32 tiles keeps 28 of the 32 vector registers accumulating,
// where Eigen 3.4's float kernel (48 x 4 tiles) keeps 12; with AVX2 and FMA the
// same kernel runs 6 x 16 tiles in 12 of the 16 registers; elsewhere it falls
// back to Eigen.
//
// With the kernel every element of C is summed in the same order (k
// ascending, in blocks of 256) whatever the thread count, which rows of A come
// along or which of the two instruction sets runs it, so splitting a product
// by rows gives bit-identical rows, and a product allocates nothing once its
// packing buffers have grown.
#pragma once
#include <omp.h>

#include <type_traits>
#include <vector>

#include "zibert/nn/tensor.hpp"

namespace zibert {

// One operand of a product: element (i, j) of the logical matrix sits at
// data[i * ld + j], or at data[j * ld + i] when transposed.
struct GemmOperand {
  const float* data;
  Index ld;
  bool transposed = false;
};

// C (m x n, row-major, leading dimension ldc) = A (m x k) B (k x n), or
// C += A B when accumulate, or C = bias + A B (bias, n floats, added to every
// row) when a bias is given and not accumulate. threads > 1 splits C's rows
// across OpenMP threads (only when not already inside a parallel region).
// Runs at the process's matmul_precision().
void gemm(Index m, Index n, Index k, GemmOperand a, GemmOperand b, float* c, Index ldc, bool accumulate,
          const float* bias = nullptr, int threads = 1);

// The same product in float32 whatever the process's precision.
void gemm_f32(Index m, Index n, Index k, GemmOperand a, GemmOperand b, float* c, Index ldc, bool accumulate,
              const float* bias = nullptr, int threads = 1);

// The precision of the float products for the whole process, as PyTorch's
// torch.set_float32_matmul_precision: float32 (the default), or bfloat16,
// where gemm rounds both operands to bfloat16 and sums their (exact) products
// in float32 (gemm_bf16.hpp). Set once, before any product runs (the CLI's
// --bf16); the weights, activations and everything outside the products stay
// float32.
enum class MatmulPrecision { float32, bfloat16 };
void set_matmul_precision(MatmulPrecision precision);
MatmulPrecision matmul_precision();

// The smallest row stride >= cols at which gemm reads a row-major A in place
// instead of packing it (cols itself when there is none), for scratch
// matrices whose stride is free to choose.
Index gemm_in_place_ld(Index cols);

// True when gemm uses its own kernel (AVX-512, or AVX2 with FMA) rather than
// Eigen's product.
bool gemm_is_native();
// The product gemm runs: "avx512", "avx2" (zibert's kernel) or "eigen".
// Chosen from the CPU when first asked, whatever -march the build used;
// ZIBERT_FLOAT_ISA=avx512|avx2|eigen chooses by hand (all give the same bits).
const char* gemm_isa_name();

// A weight matrix W (n, k) packed once for y = x Wᵀ + b in float32: what
// gemm_f32 computes with B = Wᵀ, the same bits, without packing W again at
// every product (float32 inference). The values are copied in.
class F32Matrix {
 public:
  F32Matrix(const float* w, Index n, Index k);
  Index rows() const { return n_; }
  Index cols() const { return k_; }
  // y (m, n) = x (m, k) Wᵀ + bias (n floats, or nullptr). threads > 1 splits
  // the rows (only outside a parallel region).
  void multiply(const CRef<float>& x, Ref<float> y, const float* bias, int threads = 1) const;

 private:
  Index n_ = 0, k_ = 0;
  int isa_ = 0;                 // the kernel whose panels packed_ holds (gemm.cpp's FloatIsa)
  AlignedVector<float> packed_; // the kernel's panels of Wᵀ, every depth block
  std::vector<float> values_;   // without a kernel of zibert's: W as given, (n, k)
};

// Eigen-typed convenience: c (=|+=) a · b, with a and b optionally transposed.
void gemm(const CRef<float>& a, bool ta, const CRef<float>& b, bool tb, Ref<float> c, bool accumulate,
          const float* bias = nullptr, int threads = 1);

// c (=|+=) op(a) · op(b), op transposing when asked, or c = bias + op(a) · op(b)
// with a bias row (n values), by Eigen's product: the double path, and the
// float one where both AVX-512 and AVX2 are missing.
template <class T>
void eigen_matmul(const CRef<T>& a, bool ta, const CRef<T>& b, bool tb, Ref<T> c, bool accumulate,
                  const T* bias = nullptr);
// Defined once, in eigen_matmul.cpp (double in the tests' zibert_f64): each of
// Eigen's eight products instantiated in every file that multiplies doubles
// cost seconds of compile time a file.
extern template void eigen_matmul<float>(const CRef<float>&, bool, const CRef<float>&, bool, Ref<float>, bool,
                                         const float*);
extern template void eigen_matmul<double>(const CRef<double>&, bool, const CRef<double>&, bool, Ref<double>, bool,
                                          const double*);

// The same, by gemm for float (split over the OpenMP threads when called
// outside a parallel region) and by Eigen for double.
template <class T>
void matmul(const CRef<T>& a, bool ta, const CRef<T>& b, bool tb, Ref<T> c, bool accumulate,
            const T* bias = nullptr) {
  if constexpr (std::is_same_v<T, float>)
    gemm(a, ta, b, tb, c, accumulate, bias, omp_get_max_threads());
  else
    eigen_matmul<T>(a, ta, b, tb, c, accumulate, bias);
}

}  // namespace zibert
