#include "zibert/nn/gemm.hpp"

#include <omp.h>

#include <algorithm>

#if defined(__AVX512F__)
#include <immintrin.h>
#endif

namespace zibert {

namespace {

#if defined(__AVX512F__)

constexpr Index kMr = 14;   // rows of a tile: broadcasts from packed A
constexpr Index kNr = 32;   // columns of a tile: two 16-float vectors of packed B
constexpr Index kKc = 256;  // depth of a block: a packed B panel (kKc x kNr) fits L1
constexpr Index kMc = 98;   // rows of a packed A block (kMc x kKc) that stays in L2

// Packs rows [0, mc) x depth [0, kc) of A (already offset) into tiles of kMr
// rows, zero past mc, in the layout that is a plain copy of the source: a
// transposed A (columns contiguous) goes depth-major, kMr floats per depth
// (element (r, p) at p * kMr + r); a row-major A goes row-major with rows kKc
// apart (element (r, p) at r * kKc + p), so the kernel's kMr broadcasts address
// with constant offsets from one pointer.
void pack_a(const GemmOperand& a, Index mc, Index kc, float* out) {
  for (Index i0 = 0; i0 < mc; i0 += kMr) {
    const Index rows = std::min(kMr, mc - i0);
    float* dst = out + i0 * kKc;
    if (a.transposed) {
      const __mmask16 mask = static_cast<__mmask16>((1u << rows) - 1), tile = (1u << kMr) - 1;
      for (Index p = 0; p < kc; ++p)
        _mm512_mask_storeu_ps(dst + p * kMr, tile, _mm512_maskz_loadu_ps(mask, a.data + p * a.ld + i0));
    } else {
      for (Index r = 0; r < rows; ++r) std::copy_n(a.data + (i0 + r) * a.ld, kc, dst + r * kKc);
      for (Index r = rows; r < kMr; ++r) std::fill_n(dst + r * kKc, kc, 0.0f);
    }
  }
}

// Packs depth [0, kc) x columns [0, n) of B (already offset) into panels of
// kNr columns: for each depth p, kNr consecutive floats; columns past n are zero.
void pack_b(const GemmOperand& b, Index kc, Index n, float* out) {
  for (Index j0 = 0; j0 < n; j0 += kNr) {
    const Index cols = std::min(kNr, n - j0);
    float* dst = out + j0 * kc;
    if (b.transposed) {
      // Column j of the panel is row j0 + j of the source: 16 x 16 blocks are
      // loaded as rows and transposed in registers (Eigen's ptranspose).
      for (Index half = 0; half < 2; ++half)
        for (Index p0 = 0; p0 < kc; p0 += 16) {
          const Index depth = std::min<Index>(16, kc - p0);
          const __mmask16 mask = static_cast<__mmask16>(depth >= 16 ? 0xFFFF : (1u << depth) - 1);
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wignored-attributes"  // __m512 as a template argument
          Eigen::internal::PacketBlock<Eigen::internal::Packet16f, 16> block;
#pragma GCC diagnostic pop
          for (Index j = 0; j < 16; ++j) {
            const Index col = 16 * half + j;
            block.packet[j] = col < cols ? _mm512_maskz_loadu_ps(mask, b.data + (j0 + col) * b.ld + p0)
                                         : _mm512_setzero_ps();
          }
          Eigen::internal::ptranspose(block);
          for (Index q = 0; q < depth; ++q) _mm512_storeu_ps(dst + (p0 + q) * kNr + 16 * half, block.packet[q]);
        }
    } else {
      const __mmask16 m0 = static_cast<__mmask16>(cols >= 16 ? 0xFFFF : (1u << cols) - 1);
      const __mmask16 m1 = static_cast<__mmask16>(cols >= 32 ? 0xFFFF : cols <= 16 ? 0 : (1u << (cols - 16)) - 1);
      for (Index p = 0; p < kc; ++p) {
        const float* src = b.data + p * b.ld + j0;
        _mm512_storeu_ps(dst + p * kNr, _mm512_maskz_loadu_ps(m0, src));
        _mm512_storeu_ps(dst + p * kNr + 16, _mm512_maskz_loadu_ps(m1, src + 16));
      }
    }
  }
}

// C[0:rows, 0:cols] = base + A tile x packed B panel over depth kc, where row
// r of base is at base + r * base_ld (base == c to accumulate, a bias row with
// base_ld == 0, or nullptr for none). Element (r, p) of the A tile (packed, or
// a row-major A read in place) is at pa[r * kRowStep + p * kDepthStep]; kVecs
// 16-float vectors of the panel are used (1 for a last panel of <= 16 columns).
template <Index kRowStep, Index kDepthStep, int kVecs>
void kernel(Index kc, const float* __restrict pa, const float* __restrict pb, float* c, Index ldc, Index rows,
            Index cols, const float* base, Index base_ld) {
  __m512 acc[kMr][kVecs];
#pragma GCC unroll 32
  for (int r = 0; r < kMr; ++r)
    for (int v = 0; v < kVecs; ++v) acc[r][v] = _mm512_setzero_ps();
  for (Index p = 0; p < kc; ++p) {
    // The destination rows are usually out of L1 (C is written once per
    // depth block): fetch them while the products run, one row per depth
    // step, so that the fetches do not all wait for line-fill buffers at once.
    if (p < rows)
      for (int v = 0; v < kVecs; ++v) _mm_prefetch(reinterpret_cast<const char*>(c + p * ldc + 16 * v), _MM_HINT_T0);
    __m512 bv[kVecs];
#pragma GCC unroll 2
    for (int v = 0; v < kVecs; ++v) bv[v] = _mm512_loadu_ps(pb + p * kNr + 16 * v);
#pragma GCC unroll 16
    for (int r = 0; r < kMr; ++r) {
      const __m512 av = _mm512_set1_ps(pa[r * kRowStep + p * kDepthStep]);
#pragma GCC unroll 2
      for (int v = 0; v < kVecs; ++v) acc[r][v] = _mm512_fmadd_ps(av, bv[v], acc[r][v]);
    }
  }
  __mmask16 mask[kVecs];
  for (int v = 0; v < kVecs; ++v) {
    const Index left = cols - 16 * v;
    mask[v] = static_cast<__mmask16>(left >= 16 ? 0xFFFF : left <= 0 ? 0 : (1u << left) - 1);
  }
#pragma GCC unroll 16
  for (int r = 0; r < kMr; ++r) {
    if (r >= rows) break;
#pragma GCC unroll 2
    for (int v = 0; v < kVecs; ++v) {
      __m512 out = acc[r][v];
      if (base) out = _mm512_add_ps(_mm512_maskz_loadu_ps(mask[v], base + r * base_ld + 16 * v), out);
      _mm512_mask_storeu_ps(c + r * ldc + 16 * v, mask[v], out);
    }
  }
}

// Per-thread packing buffers, grown once and reused.
struct PackBuffers {
  AlignedVector<float> a, b;
};
PackBuffers& pack_buffers() {
  static thread_local PackBuffers buffers;
  return buffers;
}

GemmOperand offset(const GemmOperand& x, Index i, Index j) {
  // Element (i, j) of the logical matrix becomes (0, 0).
  return {x.transposed ? x.data + j * x.ld + i : x.data + i * x.ld + j, x.ld, x.transposed};
}

using KernelFn = void (*)(Index, const float*, const float*, float*, Index, Index, Index, const float*, Index);
struct Kernels {
  KernelFn wide = nullptr, narrow = nullptr;  // for panels of > 16 and <= 16 columns
};
template <Index kRowStep, Index kDepthStep>
constexpr Kernels kernels() {
  return {kernel<kRowStep, kDepthStep, 2>, kernel<kRowStep, kDepthStep, 1>};
}

// Kernels that read a row-major A in place, for the row strides the model's
// matrices have (widths C, 3C and F of the shipped and common shapes): the
// same constant-offset broadcasts as packed rows, without the copy.
constexpr Index kInPlaceLd[] = {64, 128, 192, 256, 384, 512};
Kernels in_place_kernels(Index lda) {
  switch (lda) {
    case kInPlaceLd[0]: return kernels<kInPlaceLd[0], 1>();
    case kInPlaceLd[1]: return kernels<kInPlaceLd[1], 1>();
    case kInPlaceLd[2]: return kernels<kInPlaceLd[2], 1>();
    case kInPlaceLd[3]: return kernels<kInPlaceLd[3], 1>();
    case kInPlaceLd[4]: return kernels<kInPlaceLd[4], 1>();
    case kInPlaceLd[5]: return kernels<kInPlaceLd[5], 1>();
    default: return {};
  }
}

// Rows [0, m) of C over one depth block of kc, with B's block already packed:
// C = C + A B when add, else bias + A B (bias may be nullptr).
void gemm_rows(Index m, Index n, Index kc, const GemmOperand& a, const float* pb, float* c, Index ldc, bool add,
               const float* bias) {
  auto& buf = pack_buffers().a;
  const std::size_t need = static_cast<std::size_t>(((kMc + kMr - 1) / kMr) * kMr * kKc);
  if (buf.size() < need) buf.resize(need);
  const Kernels packed = a.transposed ? kernels<1, kMr>() : kernels<kKc, 1>();
  const Kernels in_place = a.transposed ? Kernels{} : in_place_kernels(a.ld);
  for (Index i0 = 0; i0 < m; i0 += kMc) {
    const Index mc = std::min(kMc, m - i0);
    // Full tiles read in place when a kernel has A's stride; the rest
    // (a last partial tile, whose missing rows must not be read) is packed.
    const Index unpacked = in_place.wide ? mc / kMr * kMr : 0;
    const GemmOperand block = offset(a, i0, 0);
    if (unpacked < mc) pack_a(offset(block, unpacked, 0), mc - unpacked, kc, buf.data());
    for (Index j0 = 0; j0 < n; j0 += kNr) {
      const float* panel = pb + j0 * kc;
      const Index cols = std::min(kNr, n - j0);
      for (Index ir = 0; ir < mc; ir += kMr) {
        float* dst = c + (i0 + ir) * ldc + j0;
        const float* base = add ? dst : bias ? bias + j0 : nullptr;
        const bool direct = ir < unpacked;
        const Kernels& k = direct ? in_place : packed;
        const float* tile = direct ? block.data + ir * a.ld : buf.data() + (ir - unpacked) * kKc;
        (cols > 16 ? k.wide : k.narrow)(kc, tile, panel, dst, ldc, std::min(kMr, mc - ir), cols, base,
                                        add ? ldc : 0);
      }
    }
  }
}

void native_gemm(Index m, Index n, Index k, GemmOperand a, GemmOperand b, float* c, Index ldc, bool accumulate,
                 const float* bias, int threads) {
  const Index n_pad = (n + kNr - 1) / kNr * kNr;
  AlignedVector<float>& pb = pack_buffers().b;
  const std::size_t need = static_cast<std::size_t>(n_pad * std::min(k, kKc));
  if (pb.size() < need) pb.resize(need);
  const bool parallel = threads > 1 && !omp_in_parallel() && m >= 2 * kMc;
  for (Index p0 = 0; p0 < k; p0 += kKc) {
    const Index kc = std::min(kKc, k - p0);
    pack_b(offset(b, p0, 0), kc, n, pb.data());
    const bool add = accumulate || p0 > 0;
    const GemmOperand ak = offset(a, 0, p0);
    if (!parallel) {
      gemm_rows(m, n, kc, ak, pb.data(), c, ldc, add, bias);
      continue;
    }
    const float* shared_b = pb.data();
    const Index blocks = (m + kMc - 1) / kMc;
#pragma omp parallel for schedule(static) num_threads(threads)
    for (Index blk = 0; blk < blocks; ++blk) {
      const Index i0 = blk * kMc;
      gemm_rows(std::min(kMc, m - i0), n, kc, offset(ak, i0, 0), shared_b, c + i0 * ldc, ldc, add, bias);
    }
  }
}

#endif  // __AVX512F__

}  // namespace

Index gemm_in_place_ld(Index cols) {
#if defined(__AVX512F__)
  for (Index ld : kInPlaceLd)
    if (ld >= cols) return ld;
#endif
  return cols;
}

bool gemm_is_native() {
#if defined(__AVX512F__)
  return true;
#else
  return false;
#endif
}

void gemm(Index m, Index n, Index k, GemmOperand a, GemmOperand b, float* c, Index ldc, bool accumulate,
          const float* bias, int threads) {
  if (m == 0 || n == 0) return;
  if (k == 0) {
    if (!accumulate)
      for (Index i = 0; i < m; ++i)
        for (Index j = 0; j < n; ++j) c[i * ldc + j] = bias ? bias[j] : 0.0f;
    return;
  }
#if defined(__AVX512F__)
  native_gemm(m, n, k, a, b, c, ldc, accumulate, accumulate ? nullptr : bias, threads);
#else
  (void)threads;
  using Stride = Eigen::OuterStride<>;
  auto stored = [](const GemmOperand& x, Index rows, Index cols) {  // the matrix as it sits in memory
    return Eigen::Map<const MatR<float>, 0, Stride>(x.data, x.transposed ? cols : rows, x.transposed ? rows : cols,
                                                    Stride(x.ld));
  };
  eigen_matmul<float>(stored(a, m, k), a.transposed, stored(b, k, n), b.transposed,
                      Eigen::Map<MatR<float>, 0, Stride>(c, m, n, Stride(ldc)), accumulate, bias);
#endif
}

void gemm(const CRef<float>& a, bool ta, const CRef<float>& b, bool tb, Ref<float> c, bool accumulate,
          const float* bias, int threads) {
  const Index m = ta ? a.cols() : a.rows();
  const Index k = ta ? a.rows() : a.cols();
  const Index n = tb ? b.rows() : b.cols();
  gemm(m, n, k, {a.data(), a.outerStride(), ta}, {b.data(), b.outerStride(), tb}, c.data(), c.outerStride(),
       accumulate, bias, threads);
}

}  // namespace zibert
