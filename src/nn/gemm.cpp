#include "zibert/nn/gemm.hpp"

#include <omp.h>

#include <algorithm>

#if defined(__AVX512F__) || (defined(__AVX2__) && defined(__FMA__))
#define ZIBERT_NATIVE_GEMM 1
#include <immintrin.h>
#endif

namespace zibert {

namespace {

#if defined(ZIBERT_NATIVE_GEMM)

// The vector operations the kernel needs, for AVX-512 (16 floats) or AVX2 with
// FMA (8 floats). Masks select a vector's first n lanes; masked-off lanes are
// neither read nor written.
#if defined(__AVX512F__)
struct Simd {
  using V = __m512;
  using Mask = __mmask16;
  using Packet = Eigen::internal::Packet16f;
  static constexpr Index kW = 16;
  static V zero() { return _mm512_setzero_ps(); }
  static V set1(float x) { return _mm512_set1_ps(x); }
  static V load(const float* p) { return _mm512_loadu_ps(p); }
  static void store(float* p, V v) { _mm512_storeu_ps(p, v); }
  static V fma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
  static V add(V a, V b) { return _mm512_add_ps(a, b); }
  static Mask first(Index n) { return static_cast<Mask>(n >= kW ? 0xFFFF : n <= 0 ? 0 : (1u << n) - 1); }
  static V load(const float* p, Mask m) { return _mm512_maskz_loadu_ps(m, p); }
  static void store(float* p, V v, Mask m) { _mm512_mask_storeu_ps(p, m, v); }
};
constexpr Index kMr = 14;  // rows of a tile: 14 x 2 accumulators of the 32 registers
constexpr Index kMc = 98;  // rows of a packed A block (kMc x kKc) that stays in L2: 7 tiles
#else
struct Simd {
  using V = __m256;
  using Mask = __m256i;
  using Packet = Eigen::internal::Packet8f;
  static constexpr Index kW = 8;
  static V zero() { return _mm256_setzero_ps(); }
  static V set1(float x) { return _mm256_set1_ps(x); }
  static V load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, V v) { _mm256_storeu_ps(p, v); }
  static V fma(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
  static V add(V a, V b) { return _mm256_add_ps(a, b); }
  static Mask first(Index n) {
    const int lanes = static_cast<int>(std::clamp<Index>(n, 0, kW));
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(lanes), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  }
  static V load(const float* p, Mask m) { return _mm256_maskload_ps(p, m); }
  static void store(float* p, V v, Mask m) { _mm256_maskstore_ps(p, m, v); }
};
constexpr Index kMr = 6;  // rows of a tile: 6 x 2 accumulators of the 16 registers
constexpr Index kMc = 96;  // rows of a packed A block (kMc x kKc) that stays in L2: 16 tiles
#endif

constexpr Index kW = Simd::kW;
constexpr int kVecsWide = 2;           // vectors of packed B per tile
constexpr Index kNr = kVecsWide * kW;  // columns of a tile
constexpr Index kKc = 256;             // depth of a block: a packed B panel (kKc x kNr) fits L1
static_assert(kMr <= kW, "pack_a moves a tile's rows as one vector");

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
      // Each depth's kMr floats are stored as a whole vector, whose kW − kMr
      // spare lanes the next depth's store overwrites (or the next tile's,
      // or they fall in the buffer's slack): masked stores are microcoded
      // and slow on AMD's CPUs. A source row is read whole when a vector
      // of it lies inside the block, else masked (zeros past mc).
      if (i0 + kW <= mc) {
        for (Index p = 0; p < kc; ++p) Simd::store(dst + p * kMr, Simd::load(a.data + p * a.ld + i0));
      } else {
        const Simd::Mask mask = Simd::first(rows);
        for (Index p = 0; p < kc; ++p) Simd::store(dst + p * kMr, Simd::load(a.data + p * a.ld + i0, mask));
      }
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
      // Column j of the panel is row j0 + j of the source: kW x kW blocks are
      // loaded as rows and transposed in registers (Eigen's ptranspose).
      for (Index part = 0; part < kVecsWide; ++part)
        for (Index p0 = 0; p0 < kc; p0 += kW) {
          const Index depth = std::min<Index>(kW, kc - p0);
          const Simd::Mask mask = Simd::first(depth);
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wignored-attributes"  // a vector type as a template argument
          Eigen::internal::PacketBlock<Simd::Packet, kW> block;
#pragma GCC diagnostic pop
          for (Index j = 0; j < kW; ++j) {
            const Index col = kW * part + j;
            block.packet[j] = col < cols ? Simd::load(b.data + (j0 + col) * b.ld + p0, mask) : Simd::zero();
          }
          Eigen::internal::ptranspose(block);
          for (Index q = 0; q < depth; ++q) Simd::store(dst + (p0 + q) * kNr + kW * part, block.packet[q]);
        }
    } else if (cols == kNr) {
      for (Index p = 0; p < kc; ++p)
        for (int v = 0; v < kVecsWide; ++v) Simd::store(dst + p * kNr + kW * v, Simd::load(b.data + p * b.ld + j0 + kW * v));
    } else {
      Simd::Mask mask[kVecsWide];
      for (int v = 0; v < kVecsWide; ++v) mask[v] = Simd::first(cols - kW * v);
      for (Index p = 0; p < kc; ++p)
        for (int v = 0; v < kVecsWide; ++v)
          Simd::store(dst + p * kNr + kW * v, Simd::load(b.data + p * b.ld + j0 + kW * v, mask[v]));
    }
  }
}

// C[0:rows, 0:cols] = base + A tile x packed B panel over depth kc, where row
// r of base is at base + r * base_ld (base == c to accumulate, a bias row with
// base_ld == 0, or nullptr for none). Element (r, p) of the A tile (packed, or
// a row-major A read in place) is at pa[r * kRowStep + p * kDepthStep]; kVecs
// vectors of the panel are used (1 for a last panel of <= kW columns). Every
// element is 0 + a0 b0 + a1 b1 + … by fused multiply-adds, p ascending, then
// base added: the same bits whatever the tile's shape, so for AVX-512 and
// AVX2 alike.
template <Index kRowStep, Index kDepthStep, int kVecs>
void kernel(Index kc, const float* __restrict pa, const float* __restrict pb, float* c, Index ldc, Index rows,
            Index cols, const float* base, Index base_ld) {
  Simd::V acc[kMr][kVecs];
#pragma GCC unroll 32
  for (int r = 0; r < kMr; ++r)
    for (int v = 0; v < kVecs; ++v) acc[r][v] = Simd::zero();
  for (Index p = 0; p < kc; ++p) {
    // The destination rows are usually out of L1 (C is written once per
    // depth block): fetch them while the products run, one row per depth
    // step, so that the fetches do not all wait for line-fill buffers at once.
    if (p < rows)
      for (int v = 0; v < kVecs; ++v) _mm_prefetch(reinterpret_cast<const char*>(c + p * ldc + kW * v), _MM_HINT_T0);
    Simd::V bv[kVecs];
#pragma GCC unroll 2
    for (int v = 0; v < kVecs; ++v) bv[v] = Simd::load(pb + p * kNr + kW * v);
#pragma GCC unroll 16
    for (int r = 0; r < kMr; ++r) {
      const Simd::V av = Simd::set1(pa[r * kRowStep + p * kDepthStep]);
#pragma GCC unroll 2
      for (int v = 0; v < kVecs; ++v) acc[r][v] = Simd::fma(av, bv[v], acc[r][v]);
    }
  }
  // Base added, the tile's rows stored: a whole panel with plain loads and
  // stores, a partial one masked (masked ones are microcoded on AMD's CPUs).
  auto write = [&](auto load, auto store) {
#pragma GCC unroll 16
    for (int r = 0; r < kMr; ++r) {
      if (r >= rows) break;
#pragma GCC unroll 2
      for (int v = 0; v < kVecs; ++v) {
        Simd::V out = acc[r][v];
        if (base) out = Simd::add(load(base + r * base_ld + kW * v, v), out);
        store(c + r * ldc + kW * v, out, v);
      }
    }
  };
  if (cols == kVecs * kW) {
    write([](const float* p, int) { return Simd::load(p); }, [](float* p, Simd::V x, int) { Simd::store(p, x); });
    return;
  }
  Simd::Mask mask[kVecs];
  for (int v = 0; v < kVecs; ++v) mask[v] = Simd::first(cols - kW * v);
  write([&](const float* p, int v) { return Simd::load(p, mask[v]); },
        [&](float* p, Simd::V x, int v) { Simd::store(p, x, mask[v]); });
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
  KernelFn wide = nullptr, narrow = nullptr;  // for panels of > kW and <= kW columns
};
template <Index kRowStep, Index kDepthStep>
constexpr Kernels kernels() {
  return {kernel<kRowStep, kDepthStep, kVecsWide>, kernel<kRowStep, kDepthStep, 1>};
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
  // + kW: the slack pack_a's last whole-vector store may spill into
  const std::size_t need = static_cast<std::size_t>(((kMc + kMr - 1) / kMr) * kMr * kKc + kW);
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
        (cols > kW ? k.wide : k.narrow)(kc, tile, panel, dst, ldc, std::min(kMr, mc - ir), cols, base,
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

#endif  // ZIBERT_NATIVE_GEMM

}  // namespace

Index gemm_in_place_ld(Index cols) {
#if defined(ZIBERT_NATIVE_GEMM)
  for (Index ld : kInPlaceLd)
    if (ld >= cols) return ld;
#endif
  return cols;
}

bool gemm_is_native() {
#if defined(ZIBERT_NATIVE_GEMM)
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
#if defined(ZIBERT_NATIVE_GEMM)
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
