// Eigen aliases, parameter views into the flat buffers, and growable scratch.
#pragma once
#include <Eigen/Dense>
#include <cstdint>
#include <vector>

// The floating type a source file instantiates its templates for: float in
// the libraries the program links, double when the tests' zibert_f64 library
// compiles the same file again with ZIBERT_F64 (CMakeLists.txt), for their
// double-precision gradient checks. The program never computes in double, and
// its build skips the double instantiations' minute of compiling.
#ifdef ZIBERT_F64
#define ZIBERT_REAL double
#else
#define ZIBERT_REAL float
#endif

namespace zibert {

using Index = Eigen::Index;
template <class T> using MatR = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <class T> using MatMap = Eigen::Map<MatR<T>>;
template <class T> using CMatMap = Eigen::Map<const MatR<T>>;
template <class T> using Ref = Eigen::Ref<MatR<T>>;
template <class T> using CRef = Eigen::Ref<const MatR<T>>;

// A row vector viewed in place (a bias, a LayerNorm weight).
template <class T> using RowMap = Eigen::Map<Eigen::Matrix<T, 1, Eigen::Dynamic>>;

// A parameter tensor: a (rows, cols) view into the flat parameter buffer and the
// same view into the flat gradient buffer. Vectors have cols == 1... as rows.
template <class T>
struct Param {
  T* value = nullptr;
  T* grad = nullptr;
  Index rows = 0, cols = 0;
  MatMap<T> w() const { return MatMap<T>(value, rows, cols); }
  MatMap<T> g() const { return MatMap<T>(grad, rows, cols); }
  // A bias as a row vector, for broadcasting over token rows.
  RowMap<T> row() const { return {value, rows * cols}; }
  RowMap<T> grad_row() const { return {grad, rows * cols}; }
};

// Every buffer Eigen computes on starts on a 64-byte boundary. Eigen's
// vectorised loops and reductions begin with a scalar part up to the first
// aligned element, so the rounding of a sum depends on where its data sits;
// with aligned buffers it is the same in every process, and a resumed
// training run is bit-identical to an uninterrupted one.
template <class T> using AlignedVector = std::vector<T, Eigen::aligned_allocator<T>>;

// Scratch that grows to the largest shape seen and is then reused, so the
// training step does not allocate once the first batches have passed. A
// view is written before it is read, so growing keeps nothing: the old block
// is freed before the larger one is taken, the two never coexist, and the
// allocator can reuse the old block's pages rather than take fresh ones from
// the kernel (which clears them) while batches grow longer.
template <class T>
struct Buffer {
  AlignedVector<T> data;
  MatMap<T> view(Index rows, Index cols) {
    std::size_t need = static_cast<std::size_t>(rows * cols);
    if (data.size() < need) {
      AlignedVector<T>().swap(data);
      data.resize(need);
    }
    return MatMap<T>(data.data(), rows, cols);
  }
};

}  // namespace zibert
